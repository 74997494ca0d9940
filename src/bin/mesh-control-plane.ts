#!/usr/bin/env node
import "../platform/runtime.js"
import "../platform/biscuit-wasm.js"
import { controlPlane } from "../cli/control-plane.js"
import { runCommand } from "../cli/run.js"

runCommand("mesh-control-plane", controlPlane, process.argv)
