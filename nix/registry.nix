# Builtins-only model registry: reads models/*/model.toml with builtins.readDir
# and builtins.fromTOML.  Evaluates without nixpkgs:
#   nix-instantiate --eval --strict --json nix/registry.nix
# PYREPRO_MODELS_DIR names the models folder (pyrepro.nixeval always sets it); it is empty in
# pure flake evaluation, so the flake always reads the checkout's models/ (../models from here).
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
