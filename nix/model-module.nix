# dream2nix module shared by every models/<name>/default.nix (python-pdm).
# NOT evaluated here (no dream2nix offline); see docs/nix.md.
{ config, lib, dream2nix, ... }:
let
  cfg = config.pyrepro.model;
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
    name = cfg.name;
    version = "0";
    pdm.lockfile = config.paths.package + "/pdm.lock";
    pdm.pyproject = config.paths.package + "/pyproject.toml";
    deps = { nixpkgs, ... }: { python = nixpkgs.${cfg.pythonAttr}; };
  };
}
