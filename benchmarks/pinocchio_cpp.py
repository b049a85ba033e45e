"""Pinocchio's C++ loop: rnea, crba and computeJointTorqueRegressor over N samples, timed in C++.

The Python-loop baselines of ``benchmarks/dynamics.py`` and ``benchmarks/regressor.py`` pay
~1-3 us of Python per call; a C++ user of Pinocchio does not. This module compiles (once,
into ``build/pinocchio_cpp/``) a small C++ program against the headers and libraries that the
``pin`` wheel ships (its cmeel prefix, ``site-packages/cmeel.prefix``: Pinocchio, Boost, coal)
and Eigen, loads the *same* model that the Python benchmarks build, runs each algorithm over
the samples in a plain loop, best of ``repeat`` runs, and returns us/sample plus sample 0's
outputs (checked against Pinocchio's Python bindings).

Eigen is looked for in ``$EIGEN3_INCLUDE_DIR``, then ``include/eigen3`` of every cmeel prefix
on ``sys.path`` (the ``cmeel-eigen`` wheel puts it there; ``pin`` 4.1's dependencies do not
include it: ``pip install cmeel-eigen`` gives it), ``$CONDA_PREFIX/include/eigen3``,
``/usr/include/eigen3`` and ``/usr/local/include/eigen3`` (``apt-get install libeigen3-dev``).

    python benchmarks/pinocchio_cpp.py [--n 6] [--samples 10000]

:func:`why_not` builds the program if it can and otherwise says why not in one line (no
compiler, no Eigen with the places searched, no pin headers, or the compiler's first error);
the calling benchmarks print that line in place of the C++ column, never drop it silently.

A helper row in benchmarks/README.md; its figures are the C++ columns of dynamics.py and
regressor.py, which import it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "pinocchio_cpp"

SOURCE = r"""
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>
#include <algorithm>

using namespace pinocchio;

static std::vector<double> load(const char *path, size_t count) {
  std::vector<double> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char *>(v.data()), count * sizeof(double));
  return v;
}

int main(int argc, char **argv) {
  // argv: chain.bin states.bin N repeat out.bin. chain.bin: n, then per joint parent, axis (3),
  // placement rotation (3x3, row-major) and origin (3), inertial parameters (10); gravity (3).
  // Built here as benchmarks/regressor.py's pinocchio_model builds it in Python (Pinocchio's
  // binary model archive is not portable between its Python wheel and this build's joint variant).
  std::ifstream cf(argv[1], std::ios::binary);
  auto next = [&cf]() { double x; cf.read(reinterpret_cast<char *>(&x), sizeof x); return x; };
  Model model;
  const int nj = static_cast<int>(next());
  for (int i = 0; i < nj; ++i) {
    const int parent = static_cast<int>(next());
    Eigen::Vector3d axis, p;
    Eigen::Matrix3d R;
    for (int k = 0; k < 3; ++k) axis[k] = next();
    for (int r = 0; r < 3; ++r) for (int c = 0; c < 3; ++c) R(r, c) = next();
    for (int k = 0; k < 3; ++k) p[k] = next();
    Eigen::Matrix<double, 10, 1> pi;
    for (int k = 0; k < 10; ++k) pi[k] = next();
    JointIndex jid = model.addJoint(parent, JointModelRevoluteUnaligned(axis), SE3(R, p), "j" + std::to_string(i));
    model.appendBodyToJoint(jid, Inertia::FromDynamicParameters(pi), SE3::Identity());
  }
  for (int k = 0; k < 3; ++k) model.gravity.linear()[k] = next();
  Data data(model);
  const long N = std::atol(argv[3]), R = std::atol(argv[4]);
  const int n = model.nv;
  std::vector<double> s = load(argv[2], 3 * N * n);  // q, qd, qdd, each (N, n) row-major
  Eigen::Map<Eigen::MatrixXd> Q(s.data(), n, N), QD(s.data() + N * n, n, N), QDD(s.data() + 2 * N * n, n, N);
  double best[4] = {1e300, 1e300, 1e300, 1e300};
  double sink = 0.0;
  const long p = 10 * (model.nbodies - 1);
  for (long r = 0; r < R; ++r) {
    for (int a = 0; a < 4; ++a) {
      auto t0 = std::chrono::steady_clock::now();
      if (a == 3) {
        // The stacked regressor W (N n, p), sample-major, in a new buffer per run: what an
        // identification needs and what jaxid.regressor returns.
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> W(N * n, p);
        for (long k = 0; k < N; ++k)
          W.middleRows(k * n, n) = computeJointTorqueRegressor(model, data, Q.col(k), QD.col(k), QDD.col(k));
        sink += W(N * n - 1, p - 1);
      } else {
        for (long k = 0; k < N; ++k) {
          if (a == 0) sink += rnea(model, data, Q.col(k), QD.col(k), QDD.col(k))[0];
          else if (a == 1) sink += crba(model, data, Q.col(k))(0, 0);
          else sink += computeJointTorqueRegressor(model, data, Q.col(k), QD.col(k), QDD.col(k))(0, 0);
        }
      }
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best[a] = std::min(best[a], dt);
    }
  }
  std::ofstream out(argv[5], std::ios::binary);
  out.write(reinterpret_cast<const char *>(best), sizeof best);
  Eigen::VectorXd tau = rnea(model, data, Q.col(0), QD.col(0), QDD.col(0));
  data.M.setZero();
  Eigen::MatrixXd M = crba(model, data, Q.col(0));
  M.triangularView<Eigen::StrictlyLower>() = M.transpose().triangularView<Eigen::StrictlyLower>();
  Eigen::MatrixXd Y = computeJointTorqueRegressor(model, data, Q.col(0), QD.col(0), QDD.col(0));
  out.write(reinterpret_cast<const char *>(tau.data()), n * sizeof(double));
  out.write(reinterpret_cast<const char *>(M.data()), n * n * sizeof(double));
  out.write(reinterpret_cast<const char *>(Y.data()), Y.size() * sizeof(double));
  std::printf("%g\n", sink);  // keeps the loops from being optimised away
  return 0;
}
"""


def _prefixes() -> list[Path]:
    """Every cmeel prefix (``<site-packages>/cmeel.prefix``) on sys.path, pinocchio's first."""
    dirs = []
    try:
        import pinocchio

        dirs += list(Path(pinocchio.__file__).resolve().parents)
    except ImportError:
        pass
    dirs += [Path(p) for p in sys.path if p]
    out = []
    for d in dirs:
        c = d / "cmeel.prefix"
        if c.is_dir() and c.resolve() not in out:
            out.append(c.resolve())
    return out


def _prefix() -> Path | None:
    """The cmeel prefix holding Pinocchio's C++ headers and libpinocchio_default (the pin wheel's)."""
    for c in _prefixes():
        if (c / "include" / "pinocchio").is_dir():
            return c
    return None


def _eigen_candidates() -> list[Path]:
    env = [
        os.environ.get("EIGEN3_INCLUDE_DIR"),
        os.environ.get("CONDA_PREFIX") and f"{os.environ['CONDA_PREFIX']}/include/eigen3",
    ]
    return (
        [Path(e) for e in env[:1] if e]
        + [c / "include" / "eigen3" for c in _prefixes()]
        + [Path(e) for e in env[1:] if e]
        + [Path("/usr/include/eigen3"), Path("/usr/local/include/eigen3")]
    )


def eigen() -> Path | None:
    """The first folder holding ``Eigen/Dense`` among :func:`_eigen_candidates`."""
    return next((d for d in _eigen_candidates() if (d / "Eigen" / "Dense").is_file()), None)


def available() -> str | None:
    """None when the C++ loop's inputs are here (compiler, Eigen, the pin wheel's headers), else
    why not (one line). :func:`why_not` also compiles."""
    if shutil.which("g++") is None:
        return "no C++ compiler (g++) on PATH"
    if _prefix() is None:
        return "the pin wheel's C++ headers (cmeel.prefix/include/pinocchio) were not found (pip install pin)"
    if eigen() is None:
        where = ", ".join(str(d) for d in _eigen_candidates())
        return f"no Eigen headers (Eigen/Dense) in {where} (pip install cmeel-eigen, or apt-get install libeigen3-dev)"
    return None


def why_not() -> str | None:
    """None when the C++ loop program is built (compiling it now if needed), else why not, one line:
    what :func:`available` reports, or the compiler's first error."""
    why = available()
    if why:
        return why
    try:
        binary()
    except subprocess.CalledProcessError as e:
        lines = [ln for ln in (e.stderr or "").splitlines() if "error" in ln] or (e.stderr or "").splitlines()[-1:]
        return f"g++ failed building {BUILD / 'loop.cpp'}: {(lines or ['(no output)'])[0].strip()[:300]}"
    return None


def binary() -> Path:
    """Compile the loop program once per version of its source (-O3 -march=native, Pinocchio's own
    build flags aside)."""
    exe = BUILD / f"loop-{hashlib.sha256(SOURCE.encode()).hexdigest()[:12]}"
    if exe.is_file():
        return exe
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "loop.cpp").write_text(SOURCE)
    prefix = _prefix()
    # The definitions Pinocchio's CMake config exports to its users (lib/cmake/pinocchio), less
    # PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION: the wheel's precompiled algorithms do not match
    # this build's joint variant (boost::bad_get), so every algorithm is instantiated here, -O3.
    defs = [
        "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
        "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
        "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
        "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
    ]
    cmd = [
        "g++",
        "-O3",
        "-march=native",
        "-DNDEBUG",
        "-std=c++17",
        *defs,
        f"-I{prefix / 'include'}",
        f"-I{eigen()}",
        str(BUILD / "loop.cpp"),
        "-o",
        str(exe),
        f"-L{prefix / 'lib'}",
        f"-Wl,-rpath,{prefix / 'lib'}",
        "-lpinocchio_default",
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def _chain(model) -> np.ndarray:
    """A serial or tree model of revolute joints (as ``pinocchio_model`` builds them), flattened
    for the C++ program: n, then per joint parent, axis, R, p, inertial parameters; gravity."""
    out = [float(model.njoints - 1)]
    for j in range(1, model.njoints):
        jm, M = model.joints[j], model.jointPlacements[j]  # RevoluteUnaligned: .extract().axis
        out += [
            float(model.parents[j]),
            *np.asarray(jm.extract().axis),
            *np.asarray(M.rotation).ravel(),
            *np.asarray(M.translation),
            *np.asarray(model.inertias[j].toDynamicParameters()),
        ]
    out += list(np.asarray(model.gravity.linear))
    return np.asarray(out, dtype=np.float64)


def run(model, q, qd, qdd, repeat=5) -> dict:
    """Time Pinocchio's C++ rnea, crba and regressor loops on ``model`` (a pinocchio.Model) at the
    states q, qd, qdd (N, n). Returns us/sample per algorithm and sample 0's tau (n,), M (n, n),
    Y (n, 10 n). "regressor" keeps each sample's regressor in Pinocchio's data (one 6 x 10n block,
    in cache) and reads one entry; "regressor_stacked" also writes every sample's block into a new
    stacked W (N n, 10 n) per run, the output jaxid.regressor returns."""
    exe = binary()
    N, n = q.shape
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        _chain(model).tofile(d / "model.bin")
        np.concatenate([np.ascontiguousarray(x, dtype=np.float64).ravel() for x in (q, qd, qdd)]).tofile(
            d / "states.bin"
        )
        subprocess.run(
            [str(exe), str(d / "model.bin"), str(d / "states.bin"), str(N), str(repeat), str(d / "out.bin")],
            check=True,
            capture_output=True,
            text=True,
        )
        out = np.fromfile(d / "out.bin")
    best, rest = out[:4], out[4:]
    tau, M, Y = rest[:n], rest[n : n + n * n].reshape(n, n, order="F"), rest[n + n * n :].reshape(n, -1, order="F")
    names = ("rnea", "crba", "regressor", "regressor_stacked")
    return dict(us_per_sample=dict(zip(names, 1e6 * best / N)), tau=tau, M=M, Y=Y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6, help="joints of a planar chain (default 6)")
    parser.add_argument("--samples", type=int, default=10000)
    args = parser.parse_args(argv)
    why = why_not()
    if why:
        print(f"C++ loop not built: {why}")
        return 1
    import pinocchio as pin
    from regressor import pinocchio_model  # benchmarks/regressor.py (this folder is on sys.path)

    import jaxid

    robot = jaxid.models.planar(args.n)
    model = pinocchio_model(robot)
    q, qd, qdd = (np.random.default_rng(k).normal(size=(args.samples, args.n)) for k in range(3))
    res = run(model, q, qd, qdd)
    data = model.createData()
    err = np.abs(res["tau"] - pin.rnea(model, data, q[0], qd[0], qdd[0])).max()
    print(
        f"planar {args.n} (Eigen {eigen()}, pin {_prefix()}): "
        + "  ".join(f"{k} {v:.3f} us" for k, v in res["us_per_sample"].items())
        + f"  (|tau - Python bindings| = {err:.1e})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
