// Loaded before every test file, as every entry point loads it before anything else.
import "../src/platform/biscuit-wasm.js"
