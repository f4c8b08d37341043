# Evaluates the REAL nix/model.nix with stub `pkgs` and `dream2nix` made from builtins, so the
# glue (which model.toml keys feed which fetch, the patch series order, extra sources, the GPU
# wrapper) is checked without nixpkgs.  Every stub returns its arguments plus a fake outPath.
#   nix-instantiate --eval --strict --json tests/nixflake/stub-model.nix   (every model of models/)
let root = ../..; in
let
  out = tag: args: args // { outPath = "/nix/store/stub-${tag}"; stub = tag; };
  lib = {
    fakeHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    sort = builtins.sort;
    lessThan = a: b: a < b;
    filter = builtins.filter;
    hasSuffix = suffix: s: let ls = builtins.stringLength s; lx = builtins.stringLength suffix; in
      ls >= lx && builtins.substring (ls - lx) lx s == suffix;
    concatMapStrings = f: l: builtins.concatStringsSep "" (map f l);
    concatMapStringsSep = sep: f: l: builtins.concatStringsSep sep (map f l);
    mkOption = x: x;
    types = { str = "str"; path = "path"; };
    makeBinPath = ps: builtins.concatStringsSep ":" (map (p: "${p}/bin") ps);
  };
  python = {
    sitePackages = "lib/python3.10/site-packages";
    pkgs = { buildPythonPackage = out "buildPythonPackage"; setuptools = out "setuptools" { }; };
  };
  pkgs = {
    inherit lib;
    python310 = python;
    fetchgit = out "fetchgit";
    runCommand = n: env: script: out "runCommand-${n}" { inherit env script; };
    symlinkJoin = out "symlinkJoin";
    writeShellScriptBin = n: text: out "script-${n}" { inherit text; };
    patch = out "patch" { }; makeWrapper = out "makeWrapper" { };
    coreutils = out "coreutils" { }; gnugrep = out "gnugrep" { }; gnused = out "gnused" { }; gawk = out "gawk" { };
    runtimeShell = "/stub/sh";
    zip = out "zip" { }; wget = out "wget" { }; git = out "git" { };
  };
  dream2nix.lib.evalModules = args: {
    pyEnv = out "pyEnv" { modules = map toString (builtins.filter builtins.isPath args.modules); };
  };
  registry = import (root + "/nix/registry.nix");
  pkgFor = import (root + "/nix/model.nix") { inherit pkgs dream2nix registry; self = null; };
  strip = x: if builtins.isAttrs x then builtins.mapAttrs (_: strip) (removeAttrs x [ "python" "outPath" ]) else
    if builtins.isList x then map strip x else if builtins.isPath x then baseNameOf x else x;
in
builtins.mapAttrs (name: _:
  let
    pkg = pkgFor name;
    # models/<name>/default.nix + nix/model-module.nix as plain functions (no module system)
    generated = import (root + "/models/${name}/default.nix") { };
    module = import (builtins.head generated.imports) {
      inherit lib;
      config.pyrepro.model = generated.pyrepro.model;
      dream2nix.modules.dream2nix.python-pdm = "python-pdm";
    };
    nixpkgsStub = { python310 = "python310"; python311 = "python311"; python312 = "python312"; };
  in
  strip { inherit (pkg) stub text; parts = pkg.pyrepro; } // {
    module = {
      inherit (module) imports;
      inherit (module.config) name version;
      lockfile = toString module.config.pdm.lockfile;
      pyproject = toString module.config.pdm.pyproject;
      python = (module.config.deps { nixpkgs = nixpkgsStub; }).python;
      options = builtins.attrNames module.options.pyrepro.model;
    };
  }) registry
