// One QuickJS WebAssembly instance, with a heap that cannot grow past a bound. QuickJS's own memory limit
// (setMemoryLimit) refuses one large allocation but barely counts small ones (measured: many small objects or
// 1 MiB strings under an 8 MiB limit grew the wasm heap to the instance's 128 MiB ceiling), so the real limit is
// an imported WebAssembly.Memory whose maximum is QuickJS's own base (16 MiB, the module's minimum) + the budget.
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type CustomizeVariantOptions,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
// The package's types are CommonJS-shaped, while Node and bundlers load its ESM build, whose default export is the
// variant: which object holds it depends on the loader, so it is found at run time (variantOf).
import * as releaseSync from "@jitl/quickjs-wasmfile-release-sync";

/** The WebAssembly global, typed here: @types/node (which the tests type-check against) declares its types, not the value. */
type WasmMemory = Exclude<NonNullable<CustomizeVariantOptions["wasmMemory"]>, () => Promise<unknown>>;
const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory } }).WebAssembly;

/** Emscripten's module options, with the stderr hook its generated code reads (not in the package's declared type). */
type EngineModuleOptions = NonNullable<CustomizeVariantOptions["emscriptenModule"]> & { printErr?(text: string): void };

const PAGE = 64 * 1024;
/** The QuickJS module's minimum memory (its static data, stack and first heap): 256 pages. */
export const INSTANCE_BASE_BYTES = 256 * PAGE;

/** The wasm memory ceiling for runs with this memory budget: QuickJS's base plus the budget. */
export function instanceMemoryFor(memoryBytes: number): number {
  return INSTANCE_BASE_BYTES + Math.ceil(Math.max(0, memoryBytes) / PAGE) * PAGE;
}

export interface LoadOptions {
  /** The wasm heap's hard ceiling (bytes) for every run on this instance: instanceMemoryFor(the runs' memoryBytes). */
  maxMemoryBytes: number;
  /** The compiled QuickJS wasm, when the variant cannot find its .wasm file beside its JavaScript (a bundle). */
  wasmModule?: WebAssembly.Module;
  /**
   * What the engine prints on its own (an abort's "Aborted(...)" line: the release build prints nothing else), instead
   * of the process's stderr. The same text reaches the caller as the RuntimeError the aborted call throws, so the
   * default drops it.
   */
  onEngineMessage?: (text: string) => void;
}

export async function loadQuickJS(options: LoadOptions): Promise<QuickJSWASMModule> {
  const maximum = Math.max(INSTANCE_BASE_BYTES, options.maxMemoryBytes) / PAGE;
  const wasmMemory = new wasm.Memory({ initial: INSTANCE_BASE_BYTES / PAGE, maximum: Math.ceil(maximum) });
  const emscriptenModule: EngineModuleOptions = { printErr: options.onEngineMessage ?? (() => undefined) };
  const variant = newVariant(
    variantOf(releaseSync),
    options.wasmModule ? { wasmMemory, wasmModule: options.wasmModule, emscriptenModule } : { wasmMemory, emscriptenModule },
  );
  return newQuickJSWASMModuleFromVariant(variant);
}

function isSyncVariant(value: unknown): value is QuickJSSyncVariant {
  return typeof value === "object" && value !== null && "type" in value && value.type === "sync" && "importFFI" in value;
}

function variantOf(namespace: unknown): QuickJSSyncVariant {
  for (let value = namespace, depth = 0; depth < 3 && typeof value === "object" && value !== null; depth++) {
    if (isSyncVariant(value)) return value;
    value = "default" in value ? value.default : undefined;
  }
  throw new Error("@jitl/quickjs-wasmfile-release-sync did not export a QuickJS variant; reinstall it (npm install)");
}
