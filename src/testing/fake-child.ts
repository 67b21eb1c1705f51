#!/usr/bin/env node
// The subvisor-fake-child program.
export {};
