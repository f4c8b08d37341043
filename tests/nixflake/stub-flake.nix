# Evaluates the REAL flake.nix outputs function with stub nixpkgs and dream2nix inputs
# (stubs.nix), without flake machinery or network: which outputs exist for which systems, the
# apps and their programs, the checks and what they run.
#   nix-instantiate --eval --strict --json tests/nixflake/stub-flake.nix
let
  root = ../..;
  s = import ./stubs.nix;
  nixpkgs = { inherit (s) lib; legacyPackages = { x86_64-linux = s.pkgsFor "x86_64-linux"; aarch64-linux = s.pkgsFor "aarch64-linux"; }; };
  flake = import (root + "/flake.nix");
  o = flake.outputs { self = { outPath = "/stub/self"; }; inherit nixpkgs; inherit (s) dream2nix; };
  sys = "x86_64-linux";
  names = builtins.attrNames;
in
{
  inputs = flake.inputs;
  systems = map names [ o.packages o.legacyPackages o.apps o.devShells o.checks ];
  packages = names o.packages.${sys};
  models = names o.legacyPackages.${sys}.models;
  modelsAarch64 = names o.legacyPackages.aarch64-linux.models;
  apps = builtins.mapAttrs (_: a: { inherit (a) type program; }) o.apps.${sys};
  exfoliationScript = o.apps.${sys}.exfoliation.program;
  checks = builtins.mapAttrs (_: c: c.script) o.checks.${sys};
  pyrepro = s.strip (removeAttrs o.packages.${sys}.pyrepro [ "src" ]);
  devShell = map (p: p.stub) o.devShells.${sys}.default.packages;
}
