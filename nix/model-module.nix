# dream2nix module shared by every models/<name>/default.nix (python-pdm).
# dream2nix.lib.evalModules passes `dream2nix` as a special argument. Evaluated with the real
# dream2nix and a stand-in nixpkgs (tests/nixeval); tests/nixflake/stub-model.nix checks the
# values it sets with a stub `lib`. See docs/nix.md.
{ config, lib, dream2nix, ... }:
let
  cfg = config.pyrepro.model;
  # the model folder as a path (paths.package is a project-relative *string* after its apply)
  dir = dirOf cfg.modelToml;
in
{
  imports = [ dream2nix.modules.dream2nix.python-pdm ];
  options.pyrepro.model = {
    name = lib.mkOption { type = lib.types.str; };
    upstreamName = lib.mkOption { type = lib.types.str; };
    pythonAttr = lib.mkOption { type = lib.types.str; };
    modelToml = lib.mkOption { type = lib.types.path; };
  };
  config = {
    name = "pyrepro-model-${cfg.name}";
    version = "0";
    pdm.lockfile = dir + "/pdm.lock";
    pdm.pyproject = dir + "/pyproject.toml";
    # The root project (`distribution = false`) is never built; only its public.pyEnv is used.
    # python-pdm still reads `mkDerivation.src` of every package (a `.whl` suffix test), so the
    # root gets the model folder (pyproject.toml, pdm.lock) as a store path.
    mkDerivation.src = builtins.path { path = dir; name = "pyrepro-model-${cfg.name}-project"; };
    deps = { nixpkgs, ... }: { python = nixpkgs.${cfg.pythonAttr}; };
  };
}
