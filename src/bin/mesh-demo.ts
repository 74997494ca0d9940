#!/usr/bin/env node
import "../platform/runtime.js"
import { meshDemo } from "../cli/mesh-demo.js"
import { runCommand } from "../cli/run.js"

runCommand("mesh-demo", meshDemo, process.argv)
