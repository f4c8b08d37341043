# One model package, built with dream2nix's python-pdm module.
# Evaluated offline against the real dream2nix with a stand-in nixpkgs (tests/nixeval); never
# built here (nixpkgs unreachable); see docs/nix.md.
#   import ./model.nix { inherit pkgs dream2nix self; } "elemnet"
#
# Fixed-output fetches (hashes recorded in model.toml by `pyrepro source hash --write`, computed
# offline from the mirror and checked against `git sparse-checkout` + `nix hash path`):
#   - [source] subdir: cone-mode sparse checkout (root files, files of the parent folders, subdir)
#   - the model's <benchmark>.json.zip files: non-cone sparse checkout of exactly those files
# extra_sources without `hash` use lib.fakeHash: the first build fails and prints the real hash,
# which must be reviewed and written to model.toml (the hosts are unreachable here).
{ pkgs, dream2nix, self, registry ? import ./registry.nix, root ? ../. }:
name:
let
  lib = pkgs.lib;
  m = registry.${name};
  bsub = m.source.benchmarks_subdir or "jarvis_leaderboard/benchmarks/AI/SinglePropertyPrediction";
  upstream = pkgs.fetchgit {
    url = m.source.repository;
    rev = m.source.commit;
    sparseCheckout = [ m.source.subdir ];
    hash = m.source.nar_hash or lib.fakeHash;
  };
  benchmarksSrc = pkgs.fetchgit {
    url = m.source.repository;
    rev = m.source.commit;
    sparseCheckout = map (b: "${bsub}/${b}.json.zip") m.benchmarks;
    nonConeMode = true;
    hash = m.source.benchmarks_nar_hash or lib.fakeHash;
  };
  extraSrc = e: pkgs.fetchgit { url = e.repository; rev = e.commit; hash = e.hash or lib.fakeHash; };
  extras = m.extra_sources or [ ];
  treeExtras = lib.filter (e: (e.install or "package") == "tree") extras;
  packageExtras = lib.filter (e: (e.install or "package") == "package") extras;
  patchDir = root + "/patches/${name}";
  patches = if builtins.pathExists patchDir
    then map (f: patchDir + "/${f}") (lib.sort lib.lessThan
      (lib.filter (lib.hasSuffix ".patch") (builtins.attrNames (builtins.readDir patchDir))))
    else [ ];
  # pristine copy + the reviewed patch series in order (patch -p1, no fuzz, as pyrepro.patches)
  # + `install = "tree"` extra sources copied next to the entry
  src = pkgs.runCommand "${name}-src" { nativeBuildInputs = [ pkgs.patch ]; } ''
    cp -R ${upstream}/${m.source.subdir} $out
    chmod -R u+w $out
    cd $out
    ${lib.concatMapStrings (p: "patch -p1 --batch --fuzz=0 < ${p}\n") patches}
    ${lib.concatMapStrings (e: "cp -R ${extraSrc e}/${e.subdir or ""} ./${e.name}\n") treeExtras}
    chmod -R a-w $out
  '';
  env = dream2nix.lib.evalModules {
    packageSets.nixpkgs = pkgs;
    modules = [
      (root + "/models/${name}/default.nix")
      ./model-module.nix  # the logic; the generated default.nix is data only
      ./overrides.nix
      {
        paths.projectRoot = root;
        paths.projectRootFile = "flake.nix";
        paths.package = root + "/models/${name}";
      }
    ];
  };
  pyEnv = env.pyEnv;  # evalModules returns config.public
  # `install = "package"` extra sources (git projects, not on PyPI) are built against the
  # locked environment without dependency resolution, as the local backend does (pip --no-deps).
  python = pkgs."python${builtins.replaceStrings [ "." ] [ "" ] m.python}";  # as models/<name>/default.nix
  extraPkgs = map (e: python.pkgs.buildPythonPackage {
    pname = e.name; version = builtins.substring 0 7 e.commit; pyproject = true;
    src = extraSrc e; build-system = [ python.pkgs.setuptools ];
    dontCheckRuntimeDeps = true; doCheck = false;
  }) packageExtras;
  pythonEnv = if extraPkgs == [ ] then pyEnv else pkgs.symlinkJoin {
    name = "${name}-python-env";
    paths = [ pyEnv ] ++ extraPkgs;
    nativeBuildInputs = [ pkgs.makeWrapper ];
    postBuild = ''
      for p in $out/bin/python*; do
        wrapProgram "$p" --prefix PYTHONPATH : ${lib.concatMapStringsSep ":" (p: "${p}/${python.sitePackages}") extraPkgs}
      done
    '';
  };
  tools = lib.concatMapStrings (t: ":${pkgs.${t}}/bin") (lib.filter (t: t != "ipython" && t != "python") (m.runtime.tools or [ ]));
  unwrapped = import ./wrapper.nix { inherit pkgs; } {
    inherit name pythonEnv src tools;
    benchmarks = "${benchmarksSrc}/${bsub}";
    runtime = root + "/pyrepro/runtime";
    entry = m.entry.command;
  };
  # every model goes through the GPU wrapper, "none" too: it clears CUDA_VISIBLE_DEVICES and sets
  # PYREPRO_GPU=none, as the local backend does (one policy: pyrepro/data/gpu-wrapper.sh)
  package = import ./gpu.nix { inherit pkgs; } { inherit name; program = "${unwrapped}/bin/${name}"; gpu = m.gpu or "none"; };
in
# the parts, for inspection (`nix eval .#models.cfid.pyrepro.patches`) and tests/test_nixeval.py
package // { pyrepro = { inherit upstream benchmarksSrc src patches pythonEnv unwrapped env; benchmarksSubdir = bsub; }; }
