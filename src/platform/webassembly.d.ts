// The subset of the WebAssembly JS API that the biscuit loader uses. Node has it; its types live in lib.dom,
// which we do not include because nothing else here runs in a browser.
declare namespace WebAssembly {
  type ImportValue = unknown
  type ModuleImports = Record<string, ImportValue>
  type Imports = Record<string, ModuleImports>
  type Exports = Record<string, unknown>
  interface ModuleImportDescriptor {
    readonly module: string
    readonly name: string
    readonly kind: string
  }
  class Module {
    constructor(bytes: Uint8Array)
    static imports(module: Module): Array<ModuleImportDescriptor>
  }
  class Instance {
    constructor(module: Module, imports?: Imports)
    readonly exports: Exports
  }
}
