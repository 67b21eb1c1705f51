#!/usr/bin/env node
// The supervise CLI.
export {};
