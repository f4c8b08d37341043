{
  description = "pyrepro: reproducible Nix packages for JARVIS-Leaderboard / MatBench models";

  inputs = {
    dream2nix.url = "github:nix-community/dream2nix";
    nixpkgs.follows = "dream2nix/nixpkgs";
  };

  outputs = { self, dream2nix, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      registry = import ./nix/registry.nix;
      modelsFor = pkgs: builtins.mapAttrs
        (name: _: import ./nix/model.nix { inherit pkgs dream2nix self registry; } name) registry;
      pyreproFor = pkgs: pkgs.python3Packages.buildPythonApplication {
        pname = "pyrepro"; version = "0"; pyproject = true; src = ./.;
        build-system = [ pkgs.python3Packages.setuptools ];
        dependencies = with pkgs.python3Packages; [ typer tomlkit jinja2 networkx packaging ];
      };
    in
    {
      legacyPackages = forAll (pkgs: { models = modelsFor pkgs; });
      packages = forAll (pkgs: modelsFor pkgs // { pyrepro = pyreproFor pkgs; });
      apps = forAll (pkgs: import ./nix/apps.nix { inherit pkgs registry; models = modelsFor pkgs; } // {
        pyrepro = { type = "app"; program = "${pyreproFor pkgs}/bin/pyrepro"; };
      });
      devShells = forAll (pkgs: { default = pkgs.mkShell { packages = [ pkgs.python3 pkgs.pdm (pyreproFor pkgs) ]; }; });
      # Import check and test-mode run per model (test mode needs `pyrepro data fixture`; unverified here).
      checks = forAll (pkgs: nixpkgs.lib.concatMapAttrs (name: pkg: {
        "${name}-import" = pkgs.runCommand "${name}-import" { } "test -x ${pkg}/bin/${name} && touch $out";
        "${name}-test" = pkgs.runCommand "${name}-test" { } ''
          export HOME=$TMPDIR
          ${pyreproFor pkgs}/bin/pyrepro data fixture --out $TMPDIR/data
          PYREPRO_DATA_DIR=$TMPDIR/data ${pkg}/bin/${name} --test
          touch $out
        '';
      }) (modelsFor pkgs));
    };
}
