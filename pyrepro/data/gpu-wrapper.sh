#!/bin/sh
# pyrepro GPU wrapper (nixGL-style): find the host's NVIDIA user-space driver at run time,
# expose only its libraries through a private directory prepended to LD_LIBRARY_PATH, and
# run the program. Same algorithm as pyrepro/gpu.py (tests compare the two).
#
# Usage: gpu-wrapper PROGRAM [--gpu] [ARGS...]
# Policy (the same as pyrepro.gpu.decide; tests/test_gpu.py runs both over every case):
#   none      CPU, always (CUDA_VISIBLE_DEVICES=""); a GPU request is a warning
#   optional  the GPU only when requested (--gpu, or PYREPRO_USE_GPU=1) and a driver is found;
#             requested without a driver: a warning, CPU
#   required  no driver: error, exit 7 (pyrepro's exit code for a missing program or driver)
# Environment:
#   PYREPRO_GPU_NEED      none | optional | required   (from model.toml; default optional)
#   PYREPRO_USE_GPU=1     request the GPU (as `pyrepro run --gpu`); `--gpu` is taken out of ARGS
#   PYREPRO_GPU_ROOT      prefix of the host filesystem (tests use a fake root; default empty)
#   PYREPRO_GPU_PRIVATE   private library directory (default: a fresh mktemp -d)
#   PYREPRO_GPU_PROBE=1   print what was found as key=value lines and exit (no exec)
set -u
need=${PYREPRO_GPU_NEED:-optional}
R=${PYREPRO_GPU_ROOT:-}
say() { printf 'pyrepro-gpu: %s\n' "$*" >&2; }
LIBRE='^(libcuda|libcudadebugger|libnvidia-[A-Za-z0-9_-]+|libnvcuvid|libnvoptix|libEGL_nvidia|libGLX_nvidia|libGLESv2_nvidia|libGLESv1_CM_nvidia)\.so(\.[0-9.]+)?$'

# take --gpu out of the program's arguments (the program itself never sees it)
requested=${PYREPRO_USE_GPU:-}
[ "$requested" = 0 ] && requested=""
prog=${1:-}; [ $# -gt 0 ] && shift
n=$#; i=0
while [ "$i" -lt "$n" ]; do
  a=$1; shift; i=$((i + 1))
  if [ "$a" = --gpu ]; then requested=1; else set -- "$@" "$a"; fi
done
set -- "$prog" "$@"

cpu() {  # run on CPU, with the reason: cpu MESSAGE PROGRAM [ARGS...]
  say "$1"; shift
  export CUDA_VISIBLE_DEVICES="" PYREPRO_GPU=none
  exec "$@"
}

if [ -z "${PYREPRO_GPU_PROBE:-}" ]; then
  if [ "$need" = none ]; then
    if [ -n "$requested" ]; then m="warning: this model has no GPU code path; running on CPU"
    else m="CPU run (model needs no GPU)"; fi
    cpu "$m" "$@"
  fi
  if [ "$need" = optional ] && [ -z "$requested" ]; then
    cpu "CPU run (GPU optional; pass --gpu or set PYREPRO_USE_GPU=1 to use one)" "$@"
  fi
fi

candidates() {
  printf 'nixos %s\n' "$R/run/opengl-driver/lib"
  if [ -z "$R" ]; then
    { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } |
      sed -n 's/^[[:space:]]*libcuda\.so\.1[[:space:]].*=>[[:space:]]*\(.*\)\/[^/]*$/ldcache \1/p' | awk '!seen[$0]++'
  fi
  for d in usr/lib/x86_64-linux-gnu usr/lib/aarch64-linux-gnu usr/lib64 usr/lib usr/lib/nvidia \
           usr/local/nvidia/lib64 usr/local/nvidia/lib usr/lib/wsl/lib; do
    printf 'distro %s\n' "$R/$d"
  done
}

kind="" dir="" searched="" notes=""
while read -r k d; do
  host=${d#"$R"}
  searched="$searched${searched:+, }$host"
  [ -d "$d" ] || continue
  if [ ! -r "$d" ] || [ ! -x "$d" ]; then notes="$notes${notes:+; }cannot read $host: permission denied"; continue; fi
  if [ -e "$d/libcuda.so.1" ]; then lc="$d/libcuda.so.1"; elif [ -e "$d/libcuda.so" ]; then lc="$d/libcuda.so"; else continue; fi
  if [ ! -r "$lc" ]; then notes="$notes${notes:+; }$host/libcuda.so.1 is not readable"; continue; fi
  kind=$k dir=$d
  break
done <<EOC
$(candidates)
EOC

if [ -z "$dir" ]; then
  if [ -n "${PYREPRO_GPU_PROBE:-}" ]; then printf 'found=no\nsearched=%s\nnotes=%s\n' "$searched" "$notes"; exit 0; fi
  if [ "$need" = required ]; then
    say "error: no NVIDIA driver found (searched $searched); this model requires a GPU"
    exit 7
  fi
  cpu "warning: no NVIDIA driver found (searched $searched); running on CPU" "$@"
fi

host_dir=${dir#"$R"}
libs=""
for name in $(cd "$dir" && LC_ALL=C ls -1 | grep -E "$LIBRE"); do
  [ -r "$dir/$name" ] && libs="$libs${libs:+ }$name"
done
missing=""
for req in libcuda.so.1 libnvidia-ml.so.1 libnvidia-ptxjitcompiler.so.1; do
  case " $libs " in *" $req "*) ;; *) missing="$missing${missing:+ }$req" ;; esac
done

version="" vsource=""
if command -v nvidia-smi >/dev/null 2>&1; then
  v=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '[:space:]')
  case "$v" in [0-9]*) if printf '%s' "$v" | grep -Eq '^[0-9][0-9.]*$'; then version=$v vsource=nvidia-smi; fi ;; esac
fi
if [ -z "$version" ] && [ -r "$R/proc/driver/nvidia/version" ]; then
  v=$(sed -n 's/.*Kernel Module[[:space:]]\{1,\}\([0-9][0-9.]*\).*/\1/p' "$R/proc/driver/nvidia/version" | head -n 1)
  [ -n "$v" ] && version=$v vsource=proc
fi
if [ -z "$version" ]; then
  for name in $libs; do
    v=$(printf '%s\n' "$name" | sed -n 's/^libcuda\.so\.\([0-9]\{1,\}\.[0-9][0-9.]*\)$/\1/p')
    if [ -n "$v" ]; then version=$v vsource=libcuda; break; fi
  done
fi

egl=""
egl_dirs="$R/usr/share/glvnd/egl_vendor.d $R/etc/glvnd/egl_vendor.d"
[ "$kind" = nixos ] && egl_dirs="${dir%/lib}/share/glvnd/egl_vendor.d $egl_dirs"
for e in $egl_dirs; do
  if [ -f "$e/10_nvidia.json" ]; then egl=${e#"$R"}/10_nvidia.json; break; fi
done

if [ -n "${PYREPRO_GPU_PROBE:-}" ]; then
  printf 'found=yes\nkind=%s\nlib_dir=%s\nlibraries=%s\nversion=%s\nversion_source=%s\nmissing=%s\negl=%s\nnotes=%s\n' \
    "$kind" "$host_dir" "$libs" "$version" "$vsource" "$missing" "$egl" "$notes"
  exit 0
fi

own=""
if [ -n "${PYREPRO_GPU_PRIVATE:-}" ]; then priv=$PYREPRO_GPU_PRIVATE
else priv=$(mktemp -d "${TMPDIR:-/tmp}/pyrepro-gpu.XXXXXX") && own=1; fi
mkdir -p "$priv"
for name in $libs; do ln -sf "$dir/$name" "$priv/$name"; done
export LD_LIBRARY_PATH="$priv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TRITON_LIBCUDA_PATH="$priv"
[ -n "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"
export PYREPRO_GPU="${version:-unknown}"
n=$(printf '%s\n' $libs | grep -c .)
msg="NVIDIA driver ${version:-(version unknown)} from $host_dir ($kind); exposing $n libraries"
[ -n "$missing" ] && msg="$msg; partial: missing $(printf '%s' "$missing" | sed 's/ /, /g')"
say "$msg"
[ -z "$own" ] && exec "$@"
# A private directory this wrapper made is removed when the program ends: the program runs as
# a child (not exec), INT/TERM/HUP are passed on to it, its exit status is returned.
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' INT TERM HUP
while :; do
  wait "$child"; status=$?
  kill -0 "$child" 2>/dev/null || break
done
rm -rf "$priv"
exit "$status"
