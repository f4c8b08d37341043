# Test flake: the REAL nix/registry.nix, nix/wrapper.nix, nix/apps.nix and nix/gpu.nix wired to
# a tiny stand-in package set built with static busybox (no nixpkgs).  tests/test_nixflake.py
# copies this folder, the repo's nix/, pyrepro/data/gpu-wrapper.sh and fixture models/ into a
# tmp git repo and runs it offline.  The glue mirrors nix/model.nix (which needs dream2nix).
{
  outputs = { self }:
    let
      system = "x86_64-linux";
      registry = import ./nix/registry.nix;
      bbdir = builtins.path { path = ./busybox; name = "busybox"; };
      bb = "${bbdir}/bin/busybox";
      pkgs = {
        writeShellScriptBin = name: text: derivation {
          inherit name system text;
          builder = bb;
          args = [ "sh" "-c" ''
            ${bb} mkdir -p $out/bin
            ${bb} printf '#!${bb} sh\n%s' "$text" > $out/bin/${name}
            ${bb} chmod +x $out/bin/${name}
          '' ];
        };
        # what nix/gpu.nix uses
        lib.makeBinPath = ps: builtins.concatStringsSep ":" (map (p: "${p}/bin") ps);
        coreutils = bbdir; gnugrep = bbdir; gnused = bbdir; gawk = bbdir;
        runtimeShell = "${bb} sh";
      };
      # Stand-in Python env: bin/python is busybox sh, run.py a shell script.
      pythonEnv = derivation {
        name = "fake-python"; inherit system; builder = bb;
        args = [ "sh" "-c" "${bb} mkdir -p $out/bin && ${bb} printf '#!${bb} sh\\nexport PATH=${bbdir}/bin:$PATH\\nexec ${bb} sh \"$@\"\\n' > $out/bin/python && ${bb} chmod +x $out/bin/python" ];
      };
      src = ./fixture-src;
      models = builtins.mapAttrs (name: m:
        let
          unwrapped = import ./nix/wrapper.nix { inherit pkgs; } {
            inherit name pythonEnv src;
            benchmarks = ./fixture-src;
            runtime = ./fixture-src;
            entry = m.entry.command;
          };
        in
        import ./nix/gpu.nix { inherit pkgs; } { inherit name; program = "${unwrapped}/bin/${name}"; gpu = m.gpu or "none"; }) registry;
      apps = import ./nix/apps.nix { inherit pkgs registry models; };
    in
    {
      legacyPackages.${system}.models = models;
      packages.${system} = models;
      apps.${system} = apps;
      checks.${system} = builtins.mapAttrs (name: pkg: derivation {
        name = "${name}-test"; inherit system; builder = bb;
        args = [ "sh" "-c" "export PATH=${bbdir}/bin; export HOME=$TMPDIR PYREPRO_OUTPUT_DIR=$TMPDIR; cd $TMPDIR; ${pkg}/bin/${name} --test > $TMPDIR/log && ${bb} grep -q 'test=1' $TMPDIR/log && ${bb} test -f $TMPDIR/prediction.csv.zip && ${bb} touch $out" ];
      }) models;
    };
}
