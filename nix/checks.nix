# `checks.<system>` of the flake, per model:
#   <name>-import  every top-level module of the model's pyproject.toml dependencies imports in its
#                  Python environment (nix/import-check.py, standard library only)
#   <name>-test    the model's test mode on pyrepro's offline fixture data, predictions zip written
# Needs `pkgs.runCommand`; `models` is { name = package (from nix/model.nix) }, `pyrepro` the
# pyrepro package (for `pyrepro data fixture`).
{ pkgs, models, pyrepro, root ? ../. }:
let
  depNames = name:
    let
      deps = (builtins.fromTOML (builtins.readFile (root + "/models/${name}/pyproject.toml"))).project.dependencies or [ ];
      extras = (builtins.fromTOML (builtins.readFile (root + "/models/${name}/model.toml"))).extra_sources or [ ];
    in
    map (d: builtins.head (builtins.match "[[:space:]]*([A-Za-z0-9._-]+).*" d)) deps
    ++ map (e: e.name) (builtins.filter (e: (e.install or "package") == "package") extras);
  forModel = name: pkg: {
    "${name}-import" = pkgs.runCommand "${name}-import" { } ''
      export HOME=$TMPDIR MPLBACKEND=Agg CUDA_VISIBLE_DEVICES= TF_CPP_MIN_LOG_LEVEL=2 PYTHONNOUSERSITE=1
      export PYTHONPATH=${root + "/pyrepro/runtime"}
      test -x ${pkg}/bin/${name}
      ${pkg.pyrepro.pythonEnv}/bin/python ${./import-check.py} ${builtins.concatStringsSep " " (depNames name)}
      touch $out
    '';
    "${name}-test" = pkgs.runCommand "${name}-test" { } ''
      export HOME=$TMPDIR
      ${pyrepro}/bin/pyrepro data fixture --out $TMPDIR/fixture
      export PYREPRO_DATA_KIND=fixture PYREPRO_DATA_DIR=$TMPDIR/fixture/data
      export PYREPRO_BENCHMARKS_DIR=$TMPDIR/fixture/benchmarks PYREPRO_OUTPUT_DIR=$TMPDIR/out
      ${pkg}/bin/${name} --test
      ls $TMPDIR/out/*.csv.zip
      touch $out
    '';
  };
in
builtins.foldl' (acc: name: acc // forModel name models.${name}) { } (builtins.attrNames models)
