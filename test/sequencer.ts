// The order files start in: the longest first, so that a long file never starts last and runs on alone while every
// other worker is idle. vitest knows a file's duration from its own cache after a run on this machine; a clean clone
// (CI) has none, so the durations of a run on a 2-core machine like CI's are kept in test/durations.json (seconds,
// rounded; `node scripts/test-durations.mjs REPORT.json` rewrites it from a run's JSON report). A file in neither
// starts first: it may be long. Projects keep their order (sequence.groupOrder).
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const KEPT: Record<string, number> = JSON.parse(readFileSync(new URL("./durations.json", import.meta.url), "utf8")) as Record<string, number>;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = (file: TestSpecification): number | undefined => {
      const path = relative(root, file.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${file.project.name}:${path}`);
      return cached ? cached.duration / 1000 : KEPT[path];
    };
    return [...files].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      if (a.project.name !== b.project.name) return a.project.name < b.project.name ? -1 : 1;
      return (seconds(b) ?? Infinity) - (seconds(a) ?? Infinity);
    });
  }
}
