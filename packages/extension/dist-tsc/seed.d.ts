declare global {
    var TABRELAY_CONFIG: unknown;
}
export interface SeedConfig {
    url: string;
    token: string;
    label?: string;
}
export declare function loadSeedConfig(): SeedConfig | undefined;
