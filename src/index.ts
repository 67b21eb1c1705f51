// Public entry of subvisor: supervised runs (filled in by the run module).
export {};
