"""jax's examples/gaussian_process_regression.py (jax-ml/jax): ``marginal_likelihood =
partial(gp, compute_marginal_likelihood=True)``, ``grad_fun = jit(grad(marginal_likelihood))``
called by a Python ``train_step`` that updates the parameters, momentums and scales dicts
in place (``params[k] -= ...``), the marginal likelihood printed eagerly (here once, at the
end). Shrunk to 7 points and 12 steps.

A negative control: the updated dicts keep their shapes and dtypes ((1, 1) float32), so
``grad_fun`` compiles once; the truth counts ``gp``'s runs under a trace of ``grad_fun``.
"""

from functools import partial

import jax
import jax.numpy as np
import jax.random as random
import jax.scipy as scipy
from jax import core, grad, jit, vmap

T = [0]
numpts = 7
eye = np.eye(numpts)


def cov_map(cov_func, xs, xs2=None):
    if xs2 is None:
        return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs)
    return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs2).T


def softplus(x):
    return np.logaddexp(x, 0.0)


def exp_quadratic(x1, x2):
    return np.exp(-np.sum((x1 - x2) ** 2))


def gp(params, x, y, xtest=None, compute_marginal_likelihood=False):
    if isinstance(params["noise"], core.Tracer):
        T[0] += 1
    noise = softplus(params["noise"])
    amp = softplus(params["amplitude"])
    ls = softplus(params["lengthscale"])
    ymean = np.mean(y)
    y = y - ymean
    x = x / ls
    train_cov = amp * cov_map(exp_quadratic, x) + eye * (noise + 1e-6)
    chol = scipy.linalg.cholesky(train_cov, lower=True)
    kinvy = scipy.linalg.solve_triangular(
        chol.T, scipy.linalg.solve_triangular(chol, y, lower=True)
    )
    if compute_marginal_likelihood:
        log2pi = np.log(2.0 * 3.1415)
        ml = np.sum(
            -0.5 * np.dot(y.T, kinvy) - np.sum(np.log(np.diag(chol))) - (numpts / 2.0) * log2pi
        )
        ml -= np.sum(-0.5 * np.log(2 * 3.1415) - np.log(amp) ** 2)
        return -ml
    return None


marginal_likelihood = partial(gp, compute_marginal_likelihood=True)
grad_fun = jit(grad(marginal_likelihood))


def run(fixed: bool = False) -> dict:
    T[0] = 0
    key = random.PRNGKey(0)
    params = {
        "amplitude": np.zeros((1, 1)),
        "noise": np.zeros((1, 1)) - 5.0,
        "lengthscale": np.zeros((1, 1)),
    }
    momentums = {k: p * 0.0 for k, p in params.items()}
    scales = {k: p * 0.0 + 1.0 for k, p in params.items()}
    lr = 0.01

    def train_step(params, momentums, scales, x, y):
        grads = grad_fun(params, x, y)
        for k in params:
            momentums[k] = 0.9 * momentums[k] + 0.1 * grads[k][0]
            scales[k] = 0.9 * scales[k] + 0.1 * grads[k][0] ** 2
            params[k] -= lr * momentums[k] / np.sqrt(scales[k] + 1e-5)
        return params, momentums, scales

    x = (random.uniform(key, shape=(numpts, 1)) * 4.0) + 1
    y = np.sin(x) + 0.1 * random.normal(key, shape=(numpts, 1))
    for _ in range(12):
        params, momentums, scales = train_step(params, momentums, scales, x, y)
    out = [round(float(marginal_likelihood(params, x, y)), 4)]
    out += [round(v.item(), 4) for v in jax.tree.leaves(params)]
    return {"truth": T[0], "out": out, "function": "gp"}


#: Nothing to apply: the driver runs it once (``trial_c_driver.py``).
NO_FIX = True


if __name__ == "__main__":
    print(run())
