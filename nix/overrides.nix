# Reviewed dream2nix overrides shared by every model package (imported by nix/model.nix).
#
# Overrides for packages a model's lock does not contain are never evaluated (dream2nix
# only instantiates locked packages), so one list serves all models.
#
# Every package (overrideAll): python-pdm adds only autoPatchelfHook, so the libraries a
# manylinux wheel may expect from the host (PEP 599: glibc, libstdc++/libgcc_s, libX11, libXext,
# libXrender, libICE, libSM, libGL, glib) and zlib (numpy, scipy, pillow, h5py wheels link
# libz.so.1) are given to autoPatchelf as buildInputs.
#
# GPU: torch's and TensorFlow's default Linux wheels are CUDA builds that dlopen the host
# driver (libcuda.so.1). A pure closure cannot contain it, so
#   - autoAddDriverRunpath adds /run/opengl-driver/lib to their RUNPATH (NixOS). It must run
#     AFTER autoPatchelf, which rewrites RUNPATH (nixpkgs warns about the order): hooks run in
#     nativeBuildInputs order, so finalArgs below moves it behind autoPatchelfHook;
#   - autoPatchelf is told not to fail on the missing libcuda;
# on other distributions nix/gpu.nix's wrapper exposes the host driver at run time.
#
# Dependency cycles in a lock: pyrepro/data/cycle-breaks.toml (reviewed, with reasons).
#
# Status: evaluated offline against the real dream2nix 69eb01fa / pyproject.nix 47bd6f29 with the
# stand-in package set (tests/nixeval); never built. See docs/nix.md and docs/STATUS.md.
{ config, lib, ... }:
let
  packages = config.groups.default.packages;
  locked = name: (lib.head (lib.attrValues packages.${name})).public;

  cudaIgnore = [ "libcuda.so.1" "libcuda.so" "libnvidia-ml.so.1" ];
  driverRunpath = { config, ... }: {
    mkDerivation.nativeBuildInputs = [ config.deps.autoAddDriverRunpath ];
    env.autoPatchelfIgnoreMissingDeps = cudaIgnore;
  };
  openmp = { config, ... }: { mkDerivation.buildInputs = [ config.deps.stdenv.cc.cc.lib ]; };
  # sdists whose setup.py imports torch (no build isolation in nixpkgs): torch from the lock
  needsTorch = {
    mkDerivation.nativeBuildInputs = lib.optionals (packages ? torch) [ (locked "torch") ];
  };
  both = a: b: { imports = [ a b ]; };

  # Reviewed cycle breaks (pyrepro/data/cycle-breaks.toml). python-pdm hands each package its lock
  # closure FLATTENED on the original graph, so inside a cycle every member propagates every
  # other one; removing one edge from one package is not enough. When a lock contains a
  # reviewed break, every package's propagatedBuildInputs are cut down to what it reaches in the
  # lock graph without the broken edges (package-func wrapper: the option itself and dream2nix's
  # own overrides stay untouched), and the broken package drops `drop` from its runtime check.
  breaks = (builtins.fromTOML (builtins.readFile ../pyrepro/data/cycle-breaks.toml)).break or [ ];
  lockData = lib.importTOML config.pdm.lockfile;
  norm = n: lib.toLower (builtins.replaceStrings [ "_" "." ] [ "-" "-" ] n);
  depName = s: norm (builtins.head (builtins.match "[[:space:]]*([A-Za-z0-9][A-Za-z0-9._-]*).*" s));
  # every lock edge, markers ignored (the result is intersected with python-pdm's closure,
  # which evaluated them)
  edges = lib.zipAttrsWith (_: lib.concatLists)
    (map (p: { ${norm p.name} = map depName (p.dependencies or [ ]); }) (lockData.package or [ ]));
  cut = builtins.filter (b: builtins.elem b.drop (edges.${b.package} or [ ])) breaks;
  isCut = from: to: lib.any (b: b.package == from && b.drop == to) cut;
  reach = name: map (x: x.key) (builtins.genericClosure {
    startSet = [ { key = name; } ];
    operator = x: map (key: { inherit key; }) (builtins.filter (d: !(isCut x.key d)) (edges.${x.key} or [ ]));
  });
  drops = name: map (b: b.drop) (builtins.filter (b: b.package == name) cut);
  # The last word on each package's derivation arguments (one package-func wrapper, so the
  # options and dream2nix's own overrides stay untouched):
  #   - with reviewed cycle breaks in this lock: propagatedBuildInputs cut to what the package
  #     reaches without the broken edges; the broken package drops `drop` from its runtime check;
  #   - autoAddDriverRunpath moved after autoPatchelfHook. Hooks run in nativeBuildInputs order
  #     and the first occurrence counts; dream2nix's own torch override lists it before
  #     python-pdm's autoPatchelfHook, whose RUNPATH rewrite would drop /run/opengl-driver/lib.
  finalArgs = { config, ... }: {
    package-func.func = lib.mkForce (args:
      let
        kept = reach config.name;
        native = args.nativeBuildInputs or [ ];
        isDriver = x: x == config.deps.autoAddDriverRunpath;  # derivations compare by output path
        drivers = lib.unique (builtins.filter isDriver native);
      in
      config.deps.python.pkgs.buildPythonPackage (args
        // lib.optionalAttrs (drivers != [ ]) {
          nativeBuildInputs = builtins.filter (x: !(isDriver x)) native ++ drivers;
        }
        // lib.optionalAttrs (cut != [ ]) {
          propagatedBuildInputs = builtins.filter (p: builtins.elem p.config.name kept) (args.propagatedBuildInputs or [ ]);
        }
        // lib.optionalAttrs (drops config.name != [ ]) {
          pythonRemoveDeps = lib.unique ((args.pythonRemoveDeps or [ ]) ++ drops config.name);
        }));
  };
  # the package whose edge is cut drops it from its runtime check (pythonRemoveDeps, set in finalArgs)
  relaxHook = b: { config, ... }: {
    mkDerivation.nativeBuildInputs = [ config.deps.python.pkgs.pythonRelaxDepsHook ];
  };

  perPackage = {
    torch = driverRunpath;
    torchvision = driverRunpath;
    triton = driverRunpath;
    tensorflow = driverRunpath;
    tensorflow-cpu = driverRunpath;
    jaxlib = driverRunpath;
    dgl = driverRunpath;
    torch-scatter = needsTorch;
    torch-sparse = needsTorch;
    torch-cluster = needsTorch;
    torch-spline-conv = needsTorch;
    # links against TensorFlow's framework library, which lives in the tensorflow wheel
    tensorflow-io-gcs-filesystem.env.autoPatchelfIgnoreMissingDeps = [ "libtensorflow_framework.so.2" ];
    tensorflow-addons.env.autoPatchelfIgnoreMissingDeps = [ "libtensorflow_framework.so.2" ];
    # libgomp
    lightgbm = openmp;
    xgboost = both openmp driverRunpath;
    scikit-learn = openmp;
    # the deprecated "sklearn" dummy refuses to build unless told it is expected
    sklearn.env.SKLEARN_ALLOW_DEPRECATED_SKLEARN_PACKAGE_INSTALL = "True";
  }
  // lib.genAttrs [
    "nvidia-cublas-cu11" "nvidia-cuda-cupti-cu11" "nvidia-cuda-nvrtc-cu11" "nvidia-cuda-runtime-cu11"
    "nvidia-cudnn-cu11" "nvidia-cufft-cu11" "nvidia-curand-cu11" "nvidia-cusolver-cu11"
    "nvidia-cusparse-cu11" "nvidia-nccl-cu11" "nvidia-nvtx-cu11"
    "nvidia-cublas-cu12" "nvidia-cuda-cupti-cu12" "nvidia-cuda-nvrtc-cu12" "nvidia-cuda-runtime-cu12"
    "nvidia-cudnn-cu12" "nvidia-cufft-cu12" "nvidia-curand-cu12" "nvidia-cusolver-cu12"
    "nvidia-cusparse-cu12" "nvidia-nccl-cu12" "nvidia-nvtx-cu12" "nvidia-nvjitlink-cu12"
  ] (_: { env.autoPatchelfIgnoreMissingDeps = cudaIgnore; });
in
{
  # deps.stdenv is python-pdm's (dream2nix declares it `raw`: a second definition is an error)

  overrideAll = { config, ... }: {
    imports = [ finalArgs ];
    deps = { nixpkgs, ... }: {
      autoAddDriverRunpath = lib.mkDefault nixpkgs.autoAddDriverRunpath;
      zlib = lib.mkDefault nixpkgs.zlib;
      manylinuxLibs = lib.mkDefault nixpkgs.pythonManylinuxPackages.manylinux2014;
    };
    mkDerivation.buildInputs = lib.optionals config.deps.stdenv.isLinux
      ([ config.deps.zlib ] ++ config.deps.manylinuxLibs);
  };

  # several modules for one package are combined with `imports` (never `//`, which drops one)
  overrides = lib.zipAttrsWith (_: modules: { imports = modules; })
    (map (b: { ${b.package} = relaxHook b; }) breaks ++ [ perPackage ]);
}
