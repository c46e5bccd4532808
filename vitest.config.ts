// Test runner settings: unit tests are pure and fast; integration tests start real
// processes, so they get longer timeouts and run in separate forks.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
