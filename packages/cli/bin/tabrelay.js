#!/usr/bin/env -S node --max-semi-space-size=1 --optimize-for-size --expose-gc
// The broker is a long-lived, mostly idle server: a small young generation and V8's size-over-speed mode
// keep its resident memory low (bench/: ~45 MiB less RSS after a read workload) at no visible cost to
// latency, where the browser's page load dominates. The bundle (packages/cli/build.mjs) holds less code.
// --expose-gc: the broker collects right after converting a page (packages/broker/src/util/memory.ts).
import "../bundle/main.js";
