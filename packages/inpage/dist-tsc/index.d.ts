import type { ActionKind, ElementFacts, SnapshotNode, WireError } from "@tabrelay/protocol";
export type InpageResult<T> = {
    ok: true;
    value: T;
} | {
    ok: false;
    error: WireError;
};
export interface InpageApi {
    version: number;
    snapshot(params: {
        revision: string;
        interactiveOnly: boolean;
        viewportOnly: boolean;
    }): InpageResult<{
        url: string;
        title: string;
        nodes: SnapshotNode[];
    }>;
    inspect(params: {
        ref: string;
        revision: string;
    }): Promise<InpageResult<ElementFacts>>;
    act(params: {
        ref: string;
        revision: string;
        action: ActionKind;
        value?: string;
    }): Promise<InpageResult<{
        facts: ElementFacts;
        effects: string[];
    }>>;
    wait(params: {
        text?: string;
        textGone?: string;
        selector?: string;
        timeoutMs: number;
    }): Promise<InpageResult<{
        matched: string;
        elapsedMs: number;
    }>>;
}
declare global {
    var __tabrelayInpage: InpageApi | undefined;
}
