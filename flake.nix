{
  description = "pyrepro: reproducible Nix packages for JARVIS-Leaderboard / MatBench models";

  inputs = {
    dream2nix.url = "github:nix-community/dream2nix";
    nixpkgs.follows = "dream2nix/nixpkgs";
  };

  # Outputs (per system):
  #   legacyPackages.models.<name>   every model of models/*/model.toml (nix/registry.nix)
  #   legacyPackages.images.<name>   its OCI image (nix/image.nix: dockerTools.buildLayeredImage,
  #                                  entry point the model's app; `nix build .#images.<name>`)
  #   packages.<name>, packages.pyrepro
  #   apps.exfoliation               `nix run .#exfoliation -- --test` runs every exfoliation model
  #   apps.<name>, apps.pyrepro
  #   devShells.default              python3 + pdm + pyrepro
  #   checks.<name>-import           every module of the model's dependencies imports (nix/checks.nix)
  #   checks.<name>-test             test-mode run on pyrepro's offline fixture data
  # Evaluated offline, every output on every system, against the real dream2nix and pyproject.nix
  # (flake.lock revisions) and nixpkgs lib with a builtins-only stand-in package set
  # (tests/nixeval, docs/nix.md); the registry/app/wrapper part also runs with a busybox stand-in
  # (tests/nixflake). Nothing here has been BUILT: nixpkgs cannot be fetched where it was made.
  outputs = { self, dream2nix, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      registry = import ./nix/registry.nix;
      # a model is offered only on the systems its pdm.lock was locked for (nix/systems.nix)
      systemsOf = import ./nix/systems.nix { root = ./.; supported = systems; };
      modelsFor = pkgs: builtins.mapAttrs
        (name: _: import ./nix/model.nix { inherit pkgs dream2nix self registry; root = ./.; } name)
        (nixpkgs.lib.filterAttrs (name: _: builtins.elem pkgs.stdenv.hostPlatform.system (systemsOf name)) registry);
      pyreproFor = pkgs: pkgs.python311Packages.buildPythonApplication {
        pname = "pyrepro"; version = "0.1.0"; pyproject = true; src = ./.;
        build-system = [ pkgs.python311Packages.setuptools ];
        dependencies = with pkgs.python311Packages; [ typer tomlkit jinja2 networkx graphviz packaging ];
        pythonRelaxDeps = true;
        pythonRemoveDeps = [ "pdm" "hishel" ];  # only `pyrepro lock` needs pdm; the checks do not
        doCheck = false;
      };
      imagesFor = pkgs: models: builtins.mapAttrs
        (name: pkg: import ./nix/image.nix { inherit pkgs registry; root = ./.; } name pkg) models;
      appsFor = pkgs: let models = modelsFor pkgs; in
        import ./nix/apps.nix { inherit pkgs registry models; }
        // builtins.mapAttrs (name: pkg: { type = "app"; program = "${pkg}/bin/${name}"; }) models
        // { pyrepro = { type = "app"; program = "${pyreproFor pkgs}/bin/pyrepro"; }; };
    in
    {
      legacyPackages = forAll (pkgs: let models = modelsFor pkgs; in { inherit models; images = imagesFor pkgs models; });
      packages = forAll (pkgs: modelsFor pkgs // { pyrepro = pyreproFor pkgs; });
      apps = forAll appsFor;
      devShells = forAll (pkgs: {
        default = pkgs.mkShell { packages = [ pkgs.python311 pkgs.pdm (pyreproFor pkgs) pkgs.git ]; };
      });
      checks = forAll (pkgs: import ./nix/checks.nix { inherit pkgs; root = ./.; models = modelsFor pkgs; pyrepro = pyreproFor pkgs; });
    };
}
