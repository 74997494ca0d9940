# NixOS module: services.mesh.controlPlane, services.mesh.router and services.mesh.node, one hardened systemd
# service each. Every option named in flags.json mirrors one flag of the program (null leaves the program's default);
# the options declared below by hand are the module's own. Files (secrets, certificates, the node's configuration)
# are given as paths and handed to the service as systemd credentials, so a dynamic user reads them and nothing else
# does. test/deploy/Nix.test.ts checks every flag against the program's --help.
{
  config,
  lib,
  pkgs,
  utils,
  ...
}:
let
  inherit (lib)
    mkEnableOption
    mkIf
    mkMerge
    mkOption
    types
    ;
  table = lib.importJSON ./flags.json;
  yaml = pkgs.formats.yaml { };

  typeOf =
    spec:
    {
      str = types.nullOr types.str;
      int = types.nullOr types.ints.unsigned;
      bool = types.bool;
      listComma = types.nullOr (types.listOf types.str);
      listRepeat = types.nullOr (types.listOf types.str);
      file = types.nullOr types.path;
    }
    .${spec.type};

  flagOptions = lib.mapAttrs (
    _: spec:
    mkOption {
      type = typeOf spec;
      default = if spec.type == "bool" then false else null;
      description = "${spec.description} (`${spec.flag}`)";
    }
  );

  commonOptions = name: {
    enable = mkEnableOption name;
    package = mkOption {
      type = types.package;
      default = pkgs.mesh;
      defaultText = lib.literalExpression "pkgs.mesh";
      description = "The mesh package (the flake's overlay provides pkgs.mesh).";
    };
    extraArgs = mkOption {
      type = types.listOf types.str;
      default = [ ];
      description = "More arguments, after those the options give.";
    };
    environment = mkOption {
      type = types.attrsOf types.str;
      default = { };
      example = {
        LOG_FORMAT = "json";
      };
      description = "Environment of the service. Never a secret: those go in the *Path options.";
    };
  };

  # The hardening every mesh service gets: a dynamic user with one state folder, a read-only system, no capabilities.
  hardening = {
    DynamicUser = true;
    NoNewPrivileges = true;
    ProtectSystem = "strict";
    ProtectHome = true;
    PrivateTmp = true;
    PrivateDevices = true;
    PrivateUsers = true;
    ProtectHostname = true;
    ProtectClock = true;
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectKernelLogs = true;
    ProtectControlGroups = true;
    ProtectProc = "invisible";
    RestrictNamespaces = true;
    RestrictRealtime = true;
    RestrictSUIDSGID = true;
    LockPersonality = true;
    RemoveIPC = true;
    CapabilityBoundingSet = "";
    AmbientCapabilities = "";
    # AF_NETLINK: Node lists the network interfaces through it (libp2p announces their addresses);
    # AF_UNIX: the node's socket and postgres on a local socket.
    RestrictAddressFamilies = [
      "AF_UNIX"
      "AF_INET"
      "AF_INET6"
      "AF_NETLINK"
    ];
    SystemCallArchitectures = "native";
    SystemCallFilter = [
      "@system-service"
      "~@privileged"
    ];
    UMask = "0077";
    Restart = "on-failure";
    RestartSec = "5s";
    # The programs stop within 10 seconds of SIGTERM (docs/decisions.md).
    TimeoutStopSec = "15s";
  };

  # One systemd service from a section of flags.json and the configuration of that section.
  serviceFor =
    section: cfg: values: managedArgs:
    let
      service = table.${section};
      built = import ./args.nix { inherit service values; };
      # `%d/<option>` names a credential; every other argument is escaped for ExecStart.
      escape = arg: if lib.hasPrefix "%d/" arg then arg else utils.escapeSystemdExecArg arg;
      argv = [ (lib.getExe' cfg.package service.program) ] ++ built.args ++ managedArgs ++ cfg.extraArgs;
    in
    {
      description = "mesh ${section}";
      wantedBy = [ "multi-user.target" ];
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      # glibc's malloc keeps its mmap threshold at 128 KiB: what V8 frees after loading goes back to the system
      # (Dockerfile, docs/scale.md). The option's environment may override it.
      environment = {
        MALLOC_MMAP_THRESHOLD_ = "131072";
      }
      // cfg.environment;
      serviceConfig = hardening // {
        ExecStart = lib.concatMapStringsSep " " escape argv;
        StateDirectory = service.unit;
        StateDirectoryMode = "0700";
        WorkingDirectory = "/var/lib/${service.unit}";
        LoadCredential = built.credentials;
      };
    };

  valuesOf = section: cfg: lib.getAttrs (lib.attrNames table.${section}.options) cfg;

  cp = config.services.mesh.controlPlane;
  router = config.services.mesh.router;
  node = config.services.mesh.node;
in
{
  options.services.mesh = {
    controlPlane = commonOptions "the mesh control plane" // flagOptions table.controlPlane.options;
    router = commonOptions "a mesh router" // flagOptions table.router.options;
    node =
      commonOptions "a mesh node"
      // flagOptions table.node.options
      // {
        settings = mkOption {
          inherit (yaml) type;
          default = { };
          example = {
            labels.zone = "eu-west";
            services = [
              {
                name = "docs";
                type = "mcp";
                target_url = "http://127.0.0.1:3001/mcp";
              }
            ];
          };
          description = "The node's configuration file (mesh-node.yaml) as Nix; used when configFile is null.";
        };
        path = mkOption {
          type = types.listOf types.package;
          default = [ ];
          example = lib.literalExpression "[ pkgs.nodejs ]";
          description = "Packages on the PATH of the node, for the commands of its stdio MCP services.";
        };
      };
  };

  config = mkMerge [
    {
      assertions = [
        {
          assertion = !cp.enable || cp.issuer != null;
          message = "services.mesh.controlPlane.issuer is required (the OIDC issuer URLs)";
        }
        {
          assertion = !router.enable || router.controlPlane != null;
          message = "services.mesh.router.controlPlane is required (the control plane URL)";
        }
      ];
    }
    (mkIf cp.enable {
      systemd.services.mesh-control-plane = serviceFor "controlPlane" cp (valuesOf "controlPlane" cp) (
        # sqlite (the default driver) keeps its file in the state folder unless a DSN is given.
        lib.optionals (cp.dbDsn == null && cp.dbDsnPath == null && (cp.dbDriver == null || cp.dbDriver == "sqlite")) [
          "--db-dsn"
          "/var/lib/mesh-control-plane/control-plane.db"
        ]
      );
    })
    (mkIf router.enable {
      systemd.services.mesh-router = serviceFor "router" router (valuesOf "router" router) [
        "--data-dir"
        "/var/lib/mesh-router"
      ];
    })
    (mkIf node.enable {
      systemd.services.mesh-node =
        let
          configFile =
            if node.configFile != null then
              node.configFile
            else if node.settings != { } then
              yaml.generate "mesh-node.yaml" node.settings
            else
              null;
        in
        lib.recursiveUpdate
          (serviceFor "node" node (valuesOf "node" node // { inherit configFile; }) [
            "--data-dir"
            "/var/lib/mesh-node"
          ])
          {
            inherit (node) path;
            # Commands of stdio MCP services (npx, say) want a home for their caches.
            environment.HOME = "/var/lib/mesh-node";
          };
    })
  ];
}
