{
  description = "mesh: a secure mesh for AI agents (control plane, router, node)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forEachSystem = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      # nix build .#mesh (docs/deploy.md: how the dependencies are fetched without `resolved` URLs in the lockfile)
      packages = forEachSystem (pkgs: {
        mesh = pkgs.callPackage ./nix/package.nix { };
        default = self.packages.${pkgs.stdenv.hostPlatform.system}.mesh;
      });

      overlays.default = final: _prev: { mesh = final.callPackage ./nix/package.nix { }; };

      # services.mesh.controlPlane, services.mesh.router, services.mesh.node (nix/module.nix)
      nixosModules.default = {
        imports = [ ./nix/module.nix ];
        nixpkgs.overlays = [ self.overlays.default ];
      };

      checks = forEachSystem (pkgs: {
        mesh = self.packages.${pkgs.stdenv.hostPlatform.system}.mesh;
      });
    };
}
