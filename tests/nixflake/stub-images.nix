# Evaluates the REAL flake.nix's image outputs (legacyPackages.<system>.images, nix/image.nix)
# with the builtins-only stubs of stubs.nix: per system, the models offered and, per image, what
# nix/image.nix gives dockerTools.buildLayeredImage (name, config, contents, extraCommands), the
# model's app program beside it, and the record it writes (parsed).
#   nix-instantiate --eval --strict --json tests/nixflake/stub-images.nix
let
  root = ../..;
  s = import ./stubs.nix;
  nixpkgs = { inherit (s) lib; legacyPackages = { x86_64-linux = s.pkgsFor "x86_64-linux"; aarch64-linux = s.pkgsFor "aarch64-linux"; }; };
  o = (import (root + "/flake.nix")).outputs { self = { outPath = "/stub/self"; }; inherit nixpkgs; inherit (s) dream2nix; };
in
builtins.mapAttrs (system: lp: {
  models = builtins.attrNames lp.models;
  images = builtins.mapAttrs (name: img:
    let recordDir = builtins.elemAt img.contents 1; in
    {
      inherit (img) stub name config extraCommands;
      contents = map (c: c.stub) img.contents;
      package = toString lp.models.${name};
      app = o.apps.${system}.${name}.program;
      recordPath = recordDir.path;
      record = builtins.fromJSON recordDir.text;
    }) lp.images;
}) o.legacyPackages
