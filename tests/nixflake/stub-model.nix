# Evaluates the REAL nix/model.nix with stub `pkgs` and `dream2nix` made from builtins, so the
# glue (which model.toml keys feed which fetch, the patch series order, extra sources, the GPU
# wrapper) is checked without nixpkgs.  Every stub returns its arguments plus a fake outPath.
#   nix-instantiate --eval --strict --json tests/nixflake/stub-model.nix   (every model of models/)
let root = ../..; in
let
  inherit (import ./stubs.nix) lib pkgs dream2nix strip;
  registry = import (root + "/nix/registry.nix");
  pkgFor = import (root + "/nix/model.nix") { inherit pkgs dream2nix registry; self = null; };
in
builtins.mapAttrs (name: _:
  let
    pkg = pkgFor name;
    # models/<name>/default.nix (data only) + nix/model-module.nix as plain functions (no module system)
    generated = import (root + "/models/${name}/default.nix") { };
    module = import (root + "/nix/model-module.nix") {
      inherit lib;
      config.pyrepro.model = generated.pyrepro.model;
      dream2nix.modules.dream2nix.python-pdm = "python-pdm";
    };
    nixpkgsStub = { python310 = "python310"; python311 = "python311"; python312 = "python312"; };
  in
  strip { inherit (pkg) stub text; parts = pkg.pyrepro; } // {
    generatedKeys = builtins.attrNames generated;
    module = {
      inherit (module) imports;
      inherit (module.config) name version;
      lockfile = toString module.config.pdm.lockfile;
      pyproject = toString module.config.pdm.pyproject;
      python = (module.config.deps { nixpkgs = nixpkgsStub; }).python;
      options = builtins.attrNames module.options.pyrepro.model;
    };
  }) registry
