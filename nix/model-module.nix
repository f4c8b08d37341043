# dream2nix module shared by every models/<name>/default.nix (python-pdm).
# dream2nix.lib.evalModules passes `dream2nix` as a special argument.  NOT evaluated with the
# real dream2nix here (no nixpkgs offline); tests/nixflake/stub-model.nix checks the values it
# sets with a stub `lib`.  See docs/nix.md.
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
    deps = { nixpkgs, ... }: { python = nixpkgs.${cfg.pythonAttr}; };
  };
}
