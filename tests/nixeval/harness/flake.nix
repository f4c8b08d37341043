# Offline evaluation harness: consumes pyrepro's REAL flake through flake machinery (the
# `pyrepro` input is overridden with a copy of the checkout; its dream2nix, pyproject.nix and
# nixpkgs inputs with fetched sources and the stand-in package set, see tests/nixeval/harness.py).
#
# For one model on one system, `models.<system>.<name>` forces what `nix build .#models.<name>`,
# `nix flake check` and `nix run .#<name>` would instantiate: the output path of every locked
# package, public.pyEnv, the model's Python environment, the (GPU-wrapped) package, its app and
# both checks. `shared.<system>` forces the rest: apps.exfoliation, apps.pyrepro, the dev shell,
# pyrepro itself, and which systems each model is offered on.
{
  inputs.pyrepro.url = "path:/pyrepro-harness-input-is-always-overridden";
  outputs = { self, pyrepro }:
    let
      lib = pyrepro.inputs.nixpkgs.lib;
      systemsOf = attr: lib.mapAttrs (_: builtins.attrNames) attr;
    in
    {
      models = builtins.mapAttrs (system: lp: builtins.mapAttrs (name: pkg:
        let
          groups = pkg.pyrepro.env.config.groups;
          locked = lib.concatMapAttrs (g: grp: lib.mapAttrs (n: versions:
            (lib.head (lib.attrValues versions)).public.outPath) grp.packages) groups;
        in
        {
          inherit locked;
          pyEnv = pkg.pyrepro.env.pyEnv.drvPath;
          pythonEnv = pkg.pyrepro.pythonEnv.drvPath;
          package = pkg.drvPath;
          app = pyrepro.apps.${system}.${name}.program;
          checks = lib.mapAttrs (_: c: c.drvPath)
            (lib.filterAttrs (n: _: lib.hasPrefix "${name}-" n && lib.elem (lib.removePrefix "${name}-" n) [ "import" "test" ])
              pyrepro.checks.${system});
        }) lp.models) pyrepro.legacyPackages;

      # inspect.<system>.<model>: the derivation attributes of every locked package that the
      # overrides change (space-separated store paths, as the builder would see them)
      inspect = builtins.mapAttrs (system: lp: builtins.mapAttrs (name: pkg:
        lib.concatMapAttrs (g: grp: lib.mapAttrs (n: versions:
          let a = (lib.head (lib.attrValues versions)).public.out.drvAttrs; in
          lib.genAttrs [ "nativeBuildInputs" "buildInputs" "propagatedBuildInputs" "pythonRemoveDeps" "autoPatchelfIgnoreMissingDeps" ]
            (k: a.${k} or "")) grp.packages) pkg.pyrepro.env.config.groups) lp.models) pyrepro.legacyPackages;

      shared = builtins.mapAttrs (system: apps: {
        exfoliation = apps.exfoliation.program;
        pyrepro = apps.pyrepro.program;
        devShell = pyrepro.devShells.${system}.default.drvPath;
        checks = builtins.attrNames pyrepro.checks.${system};
      }) pyrepro.apps;

      systems = {
        models = lib.mapAttrs (_: lp: builtins.attrNames lp.models) pyrepro.legacyPackages;
        packages = systemsOf pyrepro.packages;
        apps = systemsOf pyrepro.apps;
        checks = systemsOf pyrepro.checks;
      };
    };
}
