# A program's command-line arguments from the flag table (flags.json) and one service's option values. Builtins only,
# so test/deploy/Nix.test.ts evaluates it with nix-instantiate and runs the programs with what it returns.
#
# null leaves the program's own default; a bool gives the bare flag when true; listComma joins the values with commas,
# listRepeat repeats the flag; a file becomes a systemd credential (LoadCredential=<option>:<path>) that the program
# reads from the credentials directory (%d), so secrets stay readable to the service's dynamic user only.
{ service, values }:
let
  inherit (builtins) attrNames concatMap concatStringsSep filter toString;
  options = service.options;
  given = filter (name: (values.${name} or null) != null) (attrNames options);
  argsOf =
    name:
    let
      spec = options.${name};
      value = values.${name};
    in
    if spec.type == "bool" then
      (if value then [ spec.flag ] else [ ])
    else if spec.type == "listRepeat" then
      concatMap (item: [ spec.flag item ]) value
    else if spec.type == "listComma" then
      (if value == [ ] then [ ] else [ spec.flag (concatStringsSep "," value) ])
    else if spec.type == "file" then
      [ spec.flag "%d/${name}" ]
    else
      [ spec.flag (toString value) ];
in
{
  args = service.subcommand ++ concatMap argsOf given;
  credentials = map (name: "${name}:${toString values.${name}}") (
    filter (name: options.${name}.type == "file") given
  );
}
