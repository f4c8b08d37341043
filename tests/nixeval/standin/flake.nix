# "nixpkgs" for offline evaluation: the real nixpkgs lib (./lib, copied in by the harness from a
# fetched nixpkgs.lib; never committed) and the builtins-only stand-in package set (./pkgs.nix).
{
  outputs = { self }:
    let lib = import ./lib; in
    {
      inherit lib;
      legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ]
        (system: import ./pkgs.nix { inherit lib system; });
    };
}
