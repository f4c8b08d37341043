# One model package, built with dream2nix's python-pdm module.
# NOT evaluated here (needs nixpkgs + dream2nix, unreachable offline); see docs/nix.md.
#   import ./model.nix { inherit pkgs dream2nix self; } "elemnet"
{ pkgs, dream2nix, self, registry ? import ./registry.nix }:
name:
let
  lib = pkgs.lib;
  m = registry.${name};
  root = ../.;
  fetchPin = subdir: hash: pkgs.fetchgit {
    url = m.source.repository;
    rev = m.source.commit;
    sparseCheckout = [ subdir ];
    hash = hash;
  };
  upstream = fetchPin m.source.subdir (m.source.nar_hash or lib.fakeHash);
  benchmarksSrc = fetchPin "jarvis_leaderboard/benchmarks/AI/SinglePropertyPrediction"
    (m.benchmarks_source.nar_hash or lib.fakeHash);
  patchDir = root + "/patches/${name}";
  patches = if builtins.pathExists patchDir
    then map (f: patchDir + "/${f}") (lib.sort lib.lessThan
      (lib.filter (lib.hasSuffix ".patch") (builtins.attrNames (builtins.readDir patchDir))))
    else [ ];
  src = pkgs.runCommand "${name}-src" { nativeBuildInputs = [ pkgs.patch ]; } ''
    cp -R ${upstream}/${m.source.subdir} $out
    chmod -R u+w $out
    cd $out
    ${lib.concatMapStrings (p: "patch -p1 --batch < ${p}\n") patches}
  '';
  env = dream2nix.lib.evalModules {
    packageSets.nixpkgs = pkgs;
    modules = [
      (root + "/models/${name}/default.nix")
      ./overrides.nix
      {
        paths.projectRoot = root;
        paths.projectRootFile = "flake.nix";
        paths.package = root + "/models/${name}";
      }
    ];
  };
  pythonEnv = env.config.public.pyEnv or env;
  tools = lib.concatMapStrings (t: ":${pkgs.${t}}/bin") (m.runtime.tools or [ ]);
  unwrapped = import ./wrapper.nix { inherit pkgs; } {
    inherit name pythonEnv src tools;
    benchmarks = "${benchmarksSrc}/jarvis_leaderboard/benchmarks";
    runtime = root + "/pyrepro/runtime";
    entry = m.entry.command;
  };
  gpuFile = ./gpu.nix;
in
if (m.gpu or "none") != "none" && builtins.pathExists gpuFile
then import gpuFile { inherit pkgs; } { inherit name; program = "${unwrapped}/bin/${name}"; gpu = m.gpu; }
else unwrapped
