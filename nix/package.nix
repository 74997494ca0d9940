# The mesh programs, built from the lockfile with buildNpmPackage: mesh-control-plane, mesh-router, mesh-node and
# mesh-one, each a wrapper that runs dist/bin/<program>.js on Node 24.
#
# The lockfile has no `resolved` URLs (npm-lock.nix says why), so the dependencies are not fetched by
# buildNpmPackage's own fetcher: each tarball is fetched by name and version with npm itself, from npm's configured
# registry (NPM_CONFIG_REGISTRY passes through to pick a mirror), as a fixed-output derivation whose hash is the
# lockfile's integrity. No dependency hash is kept here, so nothing needs updating when the lockfile changes.
{
  lib,
  stdenvNoCC,
  buildNpmPackage,
  importNpmLock,
  linkFarm,
  nodejs_24,
}:
let
  nodejs = nodejs_24;
  package = lib.importJSON ../package.json;
  platform = stdenvNoCC.hostPlatform;
  prepared = import ./npm-lock.nix {
    inherit package;
    lock = lib.importJSON ../package-lock.json;
    os = platform.parsed.kernel.name;
    cpu =
      {
        x86_64 = "x64";
        aarch64 = "arm64";
      }
      .${platform.parsed.cpu.name};
  };

  fetchTarball =
    file:
    {
      name,
      version,
      integrity,
    }:
    stdenvNoCC.mkDerivation {
      name = "npm-${lib.strings.sanitizeDerivationName file}";
      nativeBuildInputs = [ nodejs ];
      buildCommand = ''
        export HOME="$TMPDIR" npm_config_cache="$TMPDIR/npm-cache" npm_config_update_notifier=false
        cd "$TMPDIR"
        tarball=$(npm pack --ignore-scripts --silent ${lib.escapeShellArg "${name}@${version}"})
        mv "$tarball" "$out"
      '';
      outputHashMode = "flat";
      outputHashAlgo = null;
      outputHash = integrity;
      impureEnvVars = lib.fetchers.proxyImpureEnvVars ++ [ "NPM_CONFIG_REGISTRY" ];
    };

  tarballs = linkFarm "mesh-npm-tarballs" (lib.mapAttrs fetchTarball prepared.tarballs);
in
buildNpmPackage {
  pname = "mesh";
  inherit (package) version;
  inherit nodejs;

  # What `npm run build` reads: the compiler settings, src/, console/ (the console's bundle, built by esbuild) and
  # scripts/ (the members' bundles: scripts/bundle.ts).
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../package.json
      ../package-lock.json
      ../tsconfig.json
      ../tsconfig.build.json
      ../src
      ../console
      ../scripts
    ];
  };

  npmDeps = importNpmLock {
    npmRoot = tarballs;
    inherit (prepared) package;
    packageLock = prepared.lock;
  };
  npmConfigHook = importNpmLock.npmConfigHook;
  # Nothing needs an install script (better-sqlite3 ships Node-API prebuilds); the project denies them too.
  npmRebuildFlags = [ "--ignore-scripts" ];

  meta = {
    description = "A secure mesh for AI agents: control plane, router and node";
    license = lib.licenses.asl20;
    platforms = [
      "x86_64-linux"
      "aarch64-linux"
    ];
    mainProgram = "mesh-node";
  };
}
