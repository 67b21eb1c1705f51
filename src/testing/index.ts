// Public entry of subvisor/testing: the fake child kit.
export {};
