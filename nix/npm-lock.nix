# What the Nix build installs, worked out from package.json and package-lock.json with builtins only
# (test/deploy/Nix.test.ts evaluates it against the real lockfile).
#
# The lockfile carries no `resolved` URLs (the project's npm is set to omit them; see DEVELOPERS.md), and
# buildNpmPackage's fetchers skip a package without one. So every package this platform installs is listed in
# `tarballs` (name, version, integrity) for package.nix to fetch, and its lockfile entry points at that tarball
# (`resolved`, a file name that importNpmLock resolves inside the folder of tarballs). The pinned Node runtime
# packages (node-linux-*) are dropped: Nix brings Node. Packages for other platforms keep no `resolved`, and npm skips
# them as it does on any machine.
{
  package,
  lock,
  # npm's names for the platform: "linux", and "x64" or "arm64".
  os,
  cpu,
}:
let
  inherit (builtins)
    attrNames
    elem
    filter
    listToAttrs
    mapAttrs
    match
    removeAttrs
    replaceStrings
    ;
  isRuntime = name: match "node-linux-.*" name != null;
  withoutRuntime = deps: removeAttrs deps (filter isRuntime (attrNames deps));
  # The package a lockfile key names: what follows its last `node_modules/`, unless the entry says (an alias).
  nameOf = key: entry: entry.name or (builtins.head (match ".*node_modules/((@[^/]+/)?[^/]+)" key));
  fits = entry: (!(entry ? os) || elem os entry.os) && (!(entry ? cpu) || elem cpu entry.cpu);
  fetched =
    key: entry:
    key != ""
    && !(entry.link or false)
    && !(entry ? resolved)
    && entry ? integrity
    && fits entry;
  fileOf = key: entry: "${replaceStrings [ "@" "/" ] [ "" "+" ] (nameOf key entry)}-${entry.version}.tgz";
  keys = filter (key: !isRuntime (nameOf key lock.packages.${key})) (
    filter (key: key != "") (attrNames lock.packages)
  );
  kept = listToAttrs (
    map (key: {
      name = key;
      value = lock.packages.${key};
    }) keys
  );
  root = lock.packages."";
in
{
  package =
    removeAttrs package [ "optionalDependencies" ]
    // (
      if package ? optionalDependencies then
        { optionalDependencies = withoutRuntime package.optionalDependencies; }
      else
        { }
    );
  lock = lock // {
    packages =
      mapAttrs (
        key: entry: if fetched key entry then entry // { resolved = fileOf key entry; } else entry
      ) kept
      // {
        "" =
          root
          // (
            if root ? optionalDependencies then
              { optionalDependencies = withoutRuntime root.optionalDependencies; }
            else
              { }
          );
      };
  };
  tarballs = listToAttrs (
    map
      (key: {
        name = fileOf key kept.${key};
        value = {
          name = nameOf key kept.${key};
          inherit (kept.${key}) version integrity;
        };
      })
      (filter (key: fetched key kept.${key}) keys)
  );
}
