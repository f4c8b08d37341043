# The OCI image of one model: nixpkgs' dockerTools.buildLayeredImage over the model's package
# (nix/model.nix: the GPU-wrapped run wrapper, whose closure holds the Python environment built
# from pdm.lock, the patched source and the pinned benchmark files) and the reproduction record
# at /pyrepro/record.json. The Nix counterpart of `pyrepro export NAME` (docs/export.md):
#   nix build .#images.cfid && podman load -i result    (or: docker load < result)
#   podman run --rm --network=none -v DATASETS:/data/datasets:ro -v OUT:/out pyrepro/cfid:<tag> --test
# Entry point: the model's app (the same program as `nix run .#<name>`); the wrapper reads the
# data from $PYREPRO_DATA_DIR (/data/datasets) and writes the predictions to $PYREPRO_OUTPUT_DIR
# (/out). The record is data from model.toml, pdm.lock and patches/<name>/ only (builtins), so it
# evaluates without nixpkgs. Evaluated offline against stand-ins (tests/nixflake); never built
# here (nixpkgs cannot be fetched where it was written).
#   import ./image.nix { inherit pkgs registry; root = ../.; } "cfid" package
{ pkgs, registry ? import ./registry.nix, root ? ../. }:
name: package:
let
  m = registry.${name};
  lockFile = root + "/models/${name}/pdm.lock";
  patchDir = root + "/patches/${name}";
  patchFiles = if builtins.pathExists patchDir
    then builtins.sort builtins.lessThan (builtins.filter (f: builtins.match ".*[.]patch" f != null)
      (builtins.attrNames (builtins.readDir patchDir)))
    else [ ];
  patches = map (f: { file = f; sha256 = builtins.hashFile "sha256" (patchDir + "/${f}"); }) patchFiles;
  lockSha256 = builtins.hashFile "sha256" lockFile;
  version = (builtins.fromTOML (builtins.readFile (root + "/pyproject.toml"))).project.version;
  entrypoint = [ "${package}/bin/${name}" ];
  env = {
    HOME = "/tmp";
    TMPDIR = "/tmp";
    PYREPRO_CACHE = "/tmp/pyrepro";
    PYREPRO_DATA_DIR = "/data/datasets";
    PYREPRO_OUTPUT_DIR = "/out";
  };
  record = {
    schema = 1;
    kind = "pyrepro export (nix dockerTools)";
    model = name;
    title = m.title or name;
    source = { inherit (m.source) repository commit subdir; tree = m.source.tree or null; };
    lock = { file = "models/${name}/pdm.lock"; sha256 = lockSha256; };
    inherit patches;
    environment = { backend = "nix"; python = m.python; package = "${package}"; };
    pyrepro = { inherit version; };
    gpu = m.gpu or "none";
    image = { inherit entrypoint env; record = "/pyrepro/record.json"; data_dir = env.PYREPRO_DATA_DIR;
              output_dir = env.PYREPRO_OUTPUT_DIR; workdir = "/work"; test_args = m.test.args or [ "--test" ]; };
  };
  recordDir = pkgs.writeTextDir "pyrepro/record.json" (builtins.toJSON record);
in
pkgs.dockerTools.buildLayeredImage {
  name = "pyrepro/${name}";
  contents = [ package recordDir ];
  # folders a runtime mounts over or the wrapper writes into (its work dir is made under $TMPDIR)
  extraCommands = ''
    mkdir -p tmp work out data/datasets
    chmod 1777 tmp work
    chmod 0777 out
  '';
  config = {
    Entrypoint = entrypoint;
    Env = map (k: "${k}=${env.${k}}") (builtins.attrNames env);
    WorkingDir = "/work";
    Labels = {
      "org.opencontainers.image.title" = "${name}: ${m.title or name}";
      "org.opencontainers.image.source" = m.source.repository;
      "org.opencontainers.image.revision" = m.source.commit;
      "io.pyrepro.model" = name;
      "io.pyrepro.source.subdir" = m.source.subdir;
      "io.pyrepro.source.tree" = m.source.tree or "";
      "io.pyrepro.lock.sha256" = lockSha256;
      "io.pyrepro.patches" = builtins.toJSON (map (p: "${p.file} ${p.sha256}") patches);
      "io.pyrepro.version" = version;
      "io.pyrepro.backend" = "nix";
      "io.pyrepro.record" = "/pyrepro/record.json";
    };
  };
}
