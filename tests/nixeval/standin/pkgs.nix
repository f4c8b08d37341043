# Builtins-only stand-in for the part of nixpkgs that pyrepro's flake and dream2nix's python-pdm
# module use, for OFFLINE EVALUATION (never a build: every builder is `false`).
#
# What makes it a faithful test bed (see docs/nix.md):
#   - every package is a real `derivation`, and every attribute it is given becomes a derivation
#     attribute, so a package's output path depends on the output paths of its inputs. A lock
#     cycle (torch -> triton -> torch) therefore surfaces as infinite recursion, as with nixpkgs.
#   - the interfaces mirror nixpkgs where dream2nix relies on them: mkDerivation (env values must
#     be strings, booleans, integers or derivations; overrideAttrs), buildPythonPackage (format and
#     pyproject are exclusive; pname and version; python attached), python.withPackages(...).override,
#     fetchPypiLegacy(...).overrideAttrs, stdenv platforms from the real nixpkgs `lib.systems`.
#   - anything else is missing on purpose: an attribute nixpkgs lacks must not evaluate here.
# `lib` is the real nixpkgs lib (fetched nixpkgs.lib, placed next to this file by the harness).
{ lib, system }:
let
  platform = lib.systems.elaborate system;

  # one derivation attribute, as nixpkgs' mkDerivation would pass it to `derivation`
  str = where: v:
    if v == null then ""
    else if builtins.isBool v then (if v then "1" else "")
    else if builtins.isList v then builtins.concatStringsSep " " (map (str where) v)
    else if builtins.isAttrs v then
      (if v ? outPath then "${v}" else throw "stand-in: ${where} is a set without outPath (nixpkgs cannot pass it to a builder)")
    else if builtins.isFunction v then throw "stand-in: ${where} is a function"
    else if builtins.isPath v then "${v}"
    else toString v;

  # nixpkgs' stdenv.mkDerivation, reduced to what changes the derivation and its interface
  mkDerivation = fnOrAttrs:
    let
      args = if builtins.isFunction fnOrAttrs then lib.fix (final: fnOrAttrs final) else fnOrAttrs;
      name = args.name or "${args.pname}-${args.version}";
      env = args.env or { };
      envChecked = builtins.mapAttrs (n: v:
        if builtins.isString v || builtins.isBool v || builtins.isInt v || (builtins.isAttrs v && v ? outPath)
        then str "env.${n}" v
        else throw "${name}: the env attribute ${n} must be a string, boolean, integer or derivation (nixpkgs)") env;
      collisions = builtins.filter (n: args ? ${n}) (builtins.attrNames env);
      skip = [ "passthru" "meta" "env" "pos" "name" "outputs" "__structuredAttrs" ];
      attrs = builtins.mapAttrs (n: v: str "${name}.${n}" v) (removeAttrs args skip);
      outputs = args.outputs or [ "out" ];
      drv = assert collisions == [ ] || throw "${name}: env and attributes both define ${toString collisions}";
        derivation ({ inherit name system outputs; builder = "/bin/false"; } // attrs // envChecked);
      passthru = args.passthru or { };
    in
    drv // passthru // {
      inherit name passthru;
      meta = args.meta or { };
      pname = args.pname or name;
      version = args.version or "";
      # nixpkgs accepts a set, `old: set` or `final: prev: set`
      overrideAttrs = f:
        let r = if builtins.isFunction f then f args else f; upd = if builtins.isFunction r then r args else r;
        in mkDerivation (args // upd);
    };

  stdenv = {
    inherit mkDerivation system;
    hostPlatform = platform; buildPlatform = platform; targetPlatform = platform;
    isLinux = platform.isLinux; isDarwin = platform.isDarwin;
    shell = "/bin/sh";
    cc = mkDerivation { name = "gcc-wrapper"; } // {
      cc = mkDerivation { name = "gcc"; outputs = [ "out" "lib" ]; };
      libc = mkDerivation { name = "glibc"; } // { version = "2.40"; linuxHeaders = { version = "6.12"; }; };
    };
  };

  simple = name: mkDerivation { inherit name; };

  # nixpkgs' buildPythonPackage / buildPythonApplication (mk-python-derivation)
  buildPythonPackageFor = python: args:
    let
      pname = args.pname or (throw "stand-in: buildPythonPackage needs pname");
      pyproject = args.pyproject or null;
      format = args.format or null;
      ok = pyproject == null || format == null
        || throw "${pname}: buildPythonPackage takes `format` or `pyproject`, not both (nixpkgs)";
      rest = removeAttrs args [ "format" "pyproject" "dependencies" "build-system" "optional-dependencies" "disabled" ];
    in
    assert ok;
    mkDerivation (rest // {
      name = "python${python.pythonVersion}-${pname}-${args.version}";
      format = if pyproject != null then (if pyproject then "pyproject" else "other") else if format != null then format else "setuptools";
      nativeBuildInputs = [ python ] ++ (args.nativeBuildInputs or [ ]) ++ (args.build-system or [ ]);
      propagatedBuildInputs = (args.propagatedBuildInputs or [ ]) ++ (args.dependencies or [ ]);
      passthru = (args.passthru or { }) // { pythonModule = python; };
    }) // { pythonModule = python; };

  mkPython = pythonVersion: version:
    let
      attr = "python${builtins.replaceStrings [ "." ] [ "" ] pythonVersion}";
      v = lib.splitVersion version;
      sourceVersion = { major = builtins.elemAt v 0; minor = builtins.elemAt v 1; patch = builtins.elemAt v 2; suffix = ""; };
      self = mkDerivation { pname = "python3"; inherit version; } // {
        inherit pythonVersion stdenv;
        sitePackages = "lib/python${pythonVersion}/site-packages";
        executable = "python${pythonVersion}";
        implementation = "cpython";
        sourceVersion = sourceVersion;
        passthru = { implementation = "cpython"; inherit pythonVersion sourceVersion; };
        pkgs = pythonPackages;
        withPackages = f: buildEnv { extraLibs = f pythonPackages; };
        inherit buildEnv;
      };
      buildEnv = { extraLibs ? [ ], ignoreCollisions ? false, ... }@a:
        let d = mkDerivation { name = "${attr}-env"; paths = [ self ] ++ extraLibs; inherit ignoreCollisions; };
        in d // { override = f: buildEnv (a // f a); };
      bpp = buildPythonPackageFor self;
      pkg = pname: bpp { inherit pname; version = "0"; format = "wheel"; };
      pythonPackages = {
        python = self;
        buildPythonPackage = bpp;
        buildPythonApplication = bpp;
      } // lib.genAttrs [
        "setuptools" "wheel" "pip" "cython" "tomli" "pdm-backend" "hatchling" "flit-core"
        "typer" "tomlkit" "jinja2" "networkx" "graphviz" "packaging" "pythonRelaxDepsHook"
      ] pkg;
    in
    self;

  pythons = {
    python39 = mkPython "3.9" "3.9.23";
    python310 = mkPython "3.10" "3.10.18";
    python311 = mkPython "3.11" "3.11.13";
    python312 = mkPython "3.12" "3.12.11";
    python313 = mkPython "3.13" "3.13.5";
  };

  pkgs = pythons // {
    inherit lib stdenv system;
    buildPackages = pkgs;
    python3 = pythons.python312;
    python310Packages = pythons.python310.pkgs;
    python311Packages = pythons.python311.pkgs;
    python312Packages = pythons.python312.pkgs;
    runtimeShell = "/bin/sh";

    fetchPypiLegacy = { pname, file, hash, urls ? [ ], ... }:
      mkDerivation { name = file; outputHash = hash; outputHashMode = "flat"; inherit urls; };
    fetchgit = { url, rev, hash ? lib.fakeHash, sparseCheckout ? [ ], nonConeMode ? false, ... }:
      mkDerivation {
        name = "source"; inherit url rev sparseCheckout nonConeMode;
        outputHash = hash; outputHashMode = "recursive";
      };
    runCommand = name: env: script: mkDerivation (env // { inherit name; buildCommand = script; });
    writeText = name: text: mkDerivation { inherit name text; };
    writeShellScriptBin = name: text: mkDerivation { inherit name text; };
    symlinkJoin = { name, paths, ... }@a: mkDerivation a;
    mkShell = { packages ? [ ], ... }@a: mkDerivation ((removeAttrs a [ "packages" ]) // {
      name = a.name or "nix-shell"; nativeBuildInputs = (a.nativeBuildInputs or [ ]) ++ packages;
    });
  } // lib.genAttrs [
    # hooks and tools (only their paths matter for evaluation)
    "autoPatchelfHook" "autoAddDriverRunpath" "makeWrapper" "patch" "unzip" "zip" "wget" "git"
    "coreutils" "gnugrep" "gnused" "gawk" "pdm" "uv" "zlib" "bash"
  ] simple // {
    xorg = lib.genAttrs [ "libX11" "libXext" "libXrender" "libICE" "libSM" ] simple;
    # nixpkgs: lists of the libraries each manylinux policy allows a wheel to expect
    pythonManylinuxPackages = rec {
      manylinux2014 = [ (simple "glibc") stdenv.cc.cc.lib (simple "libX11") (simple "libXext") (simple "libXrender")
                        (simple "libICE") (simple "libSM") (simple "libGL") (simple "glib") ];
      manylinux2010 = manylinux2014;
      manylinux1 = manylinux2014;
    };
  };
in
pkgs
