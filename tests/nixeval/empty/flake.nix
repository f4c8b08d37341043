# Stand-in for flake inputs pyrepro never uses (dream2nix's purescript-overlay).
{ outputs = { self }: { }; }
