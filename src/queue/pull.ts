/**
 * The pull model's views, under the name the front doors import them by until they use
 * the typed queue client (see pull-view.ts).
 */
export type { PulledView, PullResult } from './pull-view.js';
