#!/usr/bin/env node
import "../platform/runtime.js"
import "../platform/biscuit-wasm.js"
import { meshOne } from "../cli/mesh-one.js"
import { runCommand } from "../cli/run.js"

runCommand("mesh-one", meshOne, process.argv)
