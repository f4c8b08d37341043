# Builtins-only model registry: reads models/*/model.toml with builtins.readDir
# and builtins.fromTOML.  Evaluates without nixpkgs:
#   nix-instantiate --eval --strict --json nix/registry.nix
# Tests point it at another models folder with PYREPRO_MODELS_DIR (empty in
# pure flake evaluation, so flakes always read ../models).
let
  envDir = builtins.getEnv "PYREPRO_MODELS_DIR";
  modelsDir = if envDir == "" then ../models else /. + envDir;
  entries = if builtins.pathExists modelsDir then builtins.readDir modelsDir else { };
  names = builtins.filter
    (n: entries.${n} == "directory" && builtins.pathExists (modelsDir + "/${n}/model.toml"))
    (builtins.attrNames entries);
  load = n: builtins.fromTOML (builtins.readFile (modelsDir + "/${n}/model.toml"));
in
builtins.listToAttrs (map (n: { name = n; value = load n; }) names)
