# Builtins-only stand-ins for the parts of nixpkgs and dream2nix that pyrepro's Nix code uses.
# Every stub returns its arguments plus a fake outPath, so evaluations can be inspected as JSON.
# Used by stub-model.nix (nix/model.nix, nix/model-module.nix) and stub-flake.nix (flake.nix).
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
    filterAttrs = pred: set: builtins.removeAttrs set (builtins.filter (n: !(pred n set.${n})) (builtins.attrNames set));
    genAttrs = names: f: builtins.listToAttrs (map (n: { name = n; value = f n; }) names);
    concatMapAttrs = f: set: builtins.foldl' (acc: n: acc // f n set.${n}) { } (builtins.attrNames set);
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
    # what nix/image.nix uses (the image outputs)
    writeTextDir = path: text: out "writeTextDir" { inherit path text; };
    dockerTools.buildLayeredImage = out "buildLayeredImage";
    # what flake.nix uses for pyrepro itself and the dev shell
    python311 = out "python311" { }; pdm = out "pdm" { };
    mkShell = out "mkShell";
    python311Packages = {
      buildPythonApplication = out "buildPythonApplication";
      setuptools = out "setuptools" { }; typer = out "typer" { }; tomlkit = out "tomlkit" { };
      jinja2 = out "jinja2" { }; networkx = out "networkx" { }; graphviz = out "graphviz" { };
      packaging = out "packaging" { };
    };
  };
  dream2nix.lib.evalModules = args: {
    pyEnv = out "pyEnv" { modules = map toString (builtins.filter builtins.isPath args.modules); };
  };
  strip = x: if builtins.isAttrs x then builtins.mapAttrs (_: strip) (removeAttrs x [ "python" "outPath" ]) else
    if builtins.isList x then map strip x else if builtins.isPath x then baseNameOf x else x;
  pkgsFor = system: pkgs // { stdenv.hostPlatform.system = system; };
in
{ inherit out lib python pkgs pkgsFor dream2nix strip; }
