"""Is my port TD3? Its update beside td3.py's, on the same weights and batch, piece by piece.

    python check_port.py notebooks.tf_port:Adapter             # a port, through its adapter
    python check_port.py notebooks.skrl_port:Defaults          # a library's own update code
    python check_port.py my_adapter.py:Adapter --env Pendulum-v1

A port (to TensorFlow, JAX, or another PyTorch TD3) plugs in through a small adapter, numpy
arrays in and out (docs/check_port.md shows how to write one). The checker loads the same
weights into the port and into td3.py's networks, hands both the same batch and the same
N(0, 1) draws for trick 3's noise, and compares each piece the port offers: the forward
passes, the stored done flag, trick 3's target action, trick 1's TD target, the critic loss's
gradients and the critics after Adam's step, the actor's step, the target networks' Polyak
step, and trick 2's delay over four whole updates. Where a piece differs it replays
td3.py's piece with each known mistake of variants.py swapped in (the drop-ins of
notebooks/port_mistakes.py) and names the one that reproduces the port's numbers; where none
does, it prints both sides' numbers. A piece the adapter does not offer is reported as not
checked, never as passed.

Exit status: 0 every checked piece matches (notes allowed), 1 a piece differs, 2 the adapter
or the command line is wrong (one line: the piece, or the option, and what was expected).
"""
import contextlib
import copy
import glob
import importlib
import importlib.util
import logging
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import core
import td3
import variants
from run.command import load_function
from run.errors import ArgumentParser, UserError, run_main
from run.envs import make_env
from notebooks import port_mistakes as pm
from plot import read_table

B = 256                 # the batch the port and td3.py both update on
STATS_B = 4096          # identical transitions, to see trick 3's noise by its statistics
TOL = 1e-4              # float32 agreement of forward passes and targets (relative)
GRAD_TOL = 2e-3         # of gradients (relative to the largest): TF and torch sum differently
NETS = ("pi", "q1", "q2", "pi_targ", "q1_targ", "q2_targ")
REQUIRED = ("gamma", "pi_lr", "q_lr", "target_noise", "noise_clip", "policy_delay")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "porting")


# ------------------------------------------------------------------------------------------
# The weights, in the adapter's layout: per network [W1, b1, W2, b2, W3, b3], W (in, out),
# so that a layer is x @ W + b (Keras's kernel; a torch Linear's weight is W.T); a critic's
# input is the concatenation [obs, act].
# ------------------------------------------------------------------------------------------
def _linears(module):
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def torch_weights(nets):
    """{name: [W1, b1, W2, b2, ...]} of torch modules' Linear layers, in module order, in the
    adapter's layout. A PyTorch port's adapter (a library's too) moves its weights with this
    and the two functions below, or through TorchNets (notebooks/sb3_port.py)."""
    return {name: [x for lin in _linears(net) for x in (lin.weight.detach().numpy().T.copy(),
                                                        lin.bias.detach().numpy().copy())]
            for name, net in nets.items()}


def load_torch_weights(nets, w):
    """Weights in the adapter's layout into torch modules' Linear layers, in module order."""
    with torch.no_grad():
        for name, net in nets.items():
            for i, lin in enumerate(_linears(net)):
                lin.weight.copy_(torch.as_tensor(w[name][2 * i].T))
                lin.bias.copy_(torch.as_tensor(w[name][2 * i + 1]))


def torch_grads(net):
    """The gradients a torch module's Linear layers hold, in the adapter's layout (an
    optimizer's step hook reads them: register_step_post_hook)."""
    return [x for lin in _linears(net) for x in (lin.weight.grad.numpy().T.copy(),
                                                 lin.bias.grad.numpy().copy())]


class TorchNets:
    """get_weights and set_weights for an adapter whose networks are torch modules in
    ``self.nets`` (pi, q1, q2, pi_targ, q1_targ, q2_targ): the library adapters subclass it."""

    def get_weights(self):
        return torch_weights(self.nets)

    def set_weights(self, w):
        load_torch_weights(self.nets, w)


def _nets(ac, ac_targ):
    return dict(pi=ac.pi, q1=ac.q1, q2=ac.q2, pi_targ=ac_targ.pi, q1_targ=ac_targ.q1,
                q2_targ=ac_targ.q2)


def get_weights(ac, ac_targ):
    return torch_weights(_nets(ac, ac_targ))


def set_weights(ac, ac_targ, w):
    load_torch_weights(_nets(ac, ac_targ), w)


def _grads(params_by_net, loss):
    """d loss / d each network's weights, in the adapter's layout (W as (in, out))."""
    names = list(params_by_net)
    flat_params = [p for n in names for p in params_by_net[n]]
    gs = torch.autograd.grad(loss, flat_params, allow_unused=True)
    gs = [torch.zeros_like(p) if g is None else g for p, g in zip(flat_params, gs)]
    out, i = {}, 0
    for n in names:
        k = len(params_by_net[n])
        out[n] = [(g.T if g.ndim == 2 else g).numpy().copy() for g in gs[i:i + k]]
        i += k
    return out


def _layer_params(net):  # in the layout's order: W1, b1, W2, b2, ...
    return [p for lin in _linears(net) for p in (lin.weight, lin.bias)]


# ------------------------------------------------------------------------------------------
# td3.py's side: its networks and pieces, run on the port's settings
# ------------------------------------------------------------------------------------------
class Reference:
    def __init__(self, obs_space, act_space, settings, seed=0):
        self.s = settings
        torch.manual_seed(seed)
        self.ac = core.MLPActorCritic(obs_space, act_space, settings["hidden_sizes"])
        self.ac_targ = copy.deepcopy(self.ac).requires_grad_(False)
        with torch.no_grad():  # targets unlike the live networks, to tell which a port used
            for p in self.ac_targ.parameters():
                p.add_(0.3 * p.abs().mean() * torch.randn_like(p))
            # target actions near the bounds, so that clipping a' to them shows, where at least
            # one dimension stays free for trick 3's noise statistics; with one dimension,
            # pi'(s') spread over the batch from bound to bound instead (some rows free)
            last = _linears(self.ac_targ.pi)[-1]
            if last.bias.numel() == 1:
                last.weight.mul_(8)
            if last.bias.numel() >= 2:
                last.bias[0] += 2.5
            if last.bias.numel() >= 3:
                last.bias[1] -= 2.5
        self.w0 = get_weights(self.ac, self.ac_targ)
        pi = self.ac.pi
        self.scale, self.bias = pi.act_scale, pi.act_bias
        self.low, self.high = self.bias - self.scale, self.bias + self.scale

    def load(self, w):
        set_weights(self.ac, self.ac_targ, w)

    def target_action(self, obs2, normal, fn=core.smoothed_target_action, live=False):
        with torch.no_grad():
            pi = (self.ac if live else self.ac_targ).pi(torch.as_tensor(obs2))
            return fn(pi, self.s["target_noise"], self.s["noise_clip"], self.low, self.high,
                      self.scale, normal=torch.as_tensor(normal))

    def critic_grads(self, batch, a2, loss_fn=td3.critic_loss, live=False):
        """Gradients of the critic loss for Q1 and Q2, with a' given (the port's, or td3.py's)."""
        ac, t = self.ac, torch.as_tensor
        o, a, r, o2, d = (t(batch[k]) for k in ("obs", "act", "rew", "obs2", "done"))
        nets = ac if live else self.ac_targ
        with torch.no_grad():
            q1_t, q2_t = nets.q1(o2, t(a2)), nets.q2(o2, t(a2))
        loss = loss_fn(ac.q1(o, a), ac.q2(o, a), r, d, q1_t, q2_t, self.s["gamma"])
        return _grads(dict(q1=_layer_params(ac.q1), q2=_layer_params(ac.q2)), loss)

    def td_target(self, batch, a2, live=False):
        t = torch.as_tensor
        nets = self.ac if live else self.ac_targ
        with torch.no_grad():
            o2 = t(batch["obs2"])
            return core.clipped_double_q_target(t(batch["rew"]), t(batch["done"]),
                                                nets.q1(o2, t(a2)), nets.q2(o2, t(a2)),
                                                self.s["gamma"]).numpy()

    def actor_grads(self, batch, objective="q1"):
        ac, o = self.ac, torch.as_tensor(batch["obs"])
        a = ac.pi(o)
        q = {"q1": lambda: ac.q1(o, a), "q2": lambda: ac.q2(o, a),
             "min": lambda: torch.min(ac.q1(o, a), ac.q2(o, a))}[objective]()
        return _grads(dict(pi=_layer_params(ac.pi)), -q.mean())


def adam_first_step(w, g, lr, eps):
    """Where torch's Adam, as td3.py builds it, takes weights ``w`` on its first step."""
    p = torch.nn.Parameter(torch.as_tensor(w).clone())
    opt = torch.optim.Adam([p], lr=lr, eps=eps)
    p.grad = torch.as_tensor(g).clone()
    opt.step()
    return p.detach().numpy()


# Adam's first step is lr * g / (|g| + eps) in torch's form; Keras adds its epsilon before the
# bias correction, which is the same step with eps / sqrt(1 - beta2), 31.6 times larger. A
# port's step is compared with both, every weight whose gradient is above float noise.
EPS_FORMS = {"torch's": 1.0, "Keras's (epsilon before the bias correction)": 1 / np.sqrt(1 - 0.999)}


def above_noise(g):
    """The gradients above float noise: a thousandth of the network's largest and more."""
    return np.abs(g) > 1e-3 * np.abs(g).max()


def adam_steps(before, after, grads, lr, eps):
    """How the weights moved against Adam's first step on ``grads``, in each place of epsilon:
    {form: (largest difference in lr, weights more than 5% of lr off)}, and how many weights
    were compared."""
    out, n = {}, 0
    for form, k in EPS_FORMS.items():
        worst, far, n = 0.0, 0, 0
        for w0, w1, g in zip(before, after, grads):
            clear = above_noise(g)
            d = np.abs((w1 - w0) - (adam_first_step(w0, g, lr, k * eps) - w0))[clear] / lr
            worst, far, n = max(worst, d.max(initial=0.0)), far + int((d > 0.05).sum()), n + int(clear.sum())
        out[form] = (worst, far)
    return out, n


def adam_line(rep, piece, fits, n, lr, eps, whose):
    """PASS when the step is Adam's in one place of epsilon, on ``n`` weights; else DIFFERS."""
    form, (worst, far) = min(fits.items(), key=lambda f: f[1][1])
    if all(f[1] == 0 for f in fits.values()):  # the gradients are too large for eps to show
        form = "either"
    if n == 0:
        rep.line("NOT CHECKED", piece, "no gradient is above float noise")
    elif far == 0:
        rep.line("PASS", piece, f"the step is Adam's (lr {lr:g}, eps {eps:g}, {form} form) on "
                 f"{whose} gradients: largest difference {worst:.3f} of lr over {n:,} weights")
    else:
        rep.line("DIFFERS", piece, f"{far:,} of {n:,} weights moved more than 5% of lr away from "
                 f"Adam(lr {lr:g}, eps {eps:g}) on {whose} gradients (largest {worst:.2f} lr): "
                 "check the optimizer, its learning rate and its epsilon")


# ------------------------------------------------------------------------------------------
# Comparing numbers
# ------------------------------------------------------------------------------------------
def rel(port, ref):
    """Largest difference, relative to the largest reference value."""
    port, ref = np.asarray(port, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(port - ref)) / max(np.max(np.abs(ref)), 1e-8))


def flat(tensors):
    return np.concatenate([np.ravel(x) for x in tensors]).astype(np.float64)


def scale_fit(port, ref):
    """(k, residual): port ~ k * ref, and how far off that is, relative to the largest value."""
    p, r = flat(port), flat(ref)
    k = float(p @ r / max(r @ r, 1e-30))
    return k, float(np.max(np.abs(p - k * r)) / max(np.max(np.abs(k * r)), 1e-12))


def sample(x, n=4):
    x = np.ravel(np.asarray(x))
    return "[" + ", ".join(f"{v:.4g}" for v in x[:n]) + (", ...]" if x.size > n else "]")


def differ(what, got, want, n=4, are="is", tol=TOL):
    """``what`` the port's and td3.py's side by side, at the places they differ most (the first
    values of each may well agree), and how many differ by more than ``tol`` of the largest."""
    got, want = np.ravel(np.asarray(got, np.float64)), np.ravel(np.asarray(want, np.float64))
    gap = np.abs(got - want)
    off = gap > tol * max(np.abs(want).max(initial=0.0), 1e-8)
    at = np.sort(np.argsort(-gap, kind="stable")[:min(n, int(off.sum()) or n)])
    show = lambda x: "[" + ", ".join(f"{v:.4g}" for v in x[at]) + "]"
    return (f"{what} {show(got)} where td3.py's {are} {show(want)} (at {', '.join(map(str, at))}; "
            f"{int(off.sum()):,} of {got.size:,} differ)")


# ------------------------------------------------------------------------------------------
# The port's side: every call through one guard, so that a broken adapter is one line
# ------------------------------------------------------------------------------------------
class Port:
    """The adapter, built fresh for each piece (fresh optimizers), its calls guarded."""

    def __init__(self, cls, dims):
        self.cls, self.dims, self.warned = cls, dims, {}
        self.settings = read_settings(cls)
        self.takes_noise = bool(getattr(cls, "takes_noise", False))

    def has(self, piece):
        return callable(getattr(self.cls, piece, None))

    def new(self, weights):
        a = self.call("__init__", lambda: self.cls(*self.dims))
        for piece in ("set_weights", "get_weights"):
            if not callable(getattr(a, piece, None)):
                raise UserError(f"the adapter has no {piece}(): the checker moves weights with it")
        self.call("set_weights", a.set_weights, weights)
        back = self.weights(a, weights)  # the weights given must come back as given
        lost = [n for n in NETS if rel(flat(back[n]), flat(weights[n])) > 1e-6]
        if lost:
            raise UserError(f"the adapter's set_weights lost the weights it was given: get_weights "
                            f"returns other {', '.join(lost)} (a port's own API may rebuild the "
                            "targets from the live networks: set the targets after it)")
        return a

    def call(self, piece, fn, *args):
        try:
            with quiet(self.warned):
                return fn(*args)
        except UserError:
            raise
        except Exception as e:  # the port's own error, said in one line
            msg = str(e).strip().splitlines()
            raise UserError(f"the adapter's {piece} raised {type(e).__name__}"
                            + (f": {msg[0][:200]}" if msg else "")) from None

    def weights(self, a, like):
        w = self.call("get_weights", a.get_weights)
        if not isinstance(w, dict) or set(NETS) - set(w):
            raise UserError(f"the adapter's get_weights must return a dict with {', '.join(NETS)}"
                            f" (got {type(w).__name__}"
                            + (f" with {', '.join(map(str, w))}" if isinstance(w, dict) else "") + ")")
        return {n: self.arrays(f"get_weights()['{n}']", w[n], like[n]) for n in NETS}

    def arrays(self, what, xs, like):
        if not isinstance(xs, (list, tuple)) or len(xs) != len(like):
            raise UserError(f"the adapter's {what} must be a list of {len(like)} arrays "
                            f"(W1, b1, W2, b2, ...), got {type(xs).__name__}"
                            + (f" of {len(xs)}" if isinstance(xs, (list, tuple)) else ""))
        out = []
        for i, (x, ref) in enumerate(zip(xs, like)):
            x = np.asarray(x, dtype=np.float32)
            if x.shape != ref.shape:
                raise UserError(f"the adapter's {what}[{i}] has shape {x.shape}, expected "
                                f"{ref.shape} (W is (in, out): x @ W + b)")
            if not np.all(np.isfinite(x)):
                raise UserError(f"the adapter's {what}[{i}] holds NaN or infinity")
            out.append(x)
        return out

    def array(self, piece, x, shapes):
        try:
            x = np.asarray(getattr(x, "numpy", lambda: x)(), dtype=np.float64)
        except Exception:
            raise UserError(f"the adapter's {piece} returned {type(x).__name__}, expected a "
                            f"numpy array") from None
        if x.shape not in shapes:
            raise UserError(f"the adapter's {piece} returned shape {x.shape}, expected "
                            + " or ".join(map(str, shapes)))
        if not np.all(np.isfinite(x)):
            raise UserError(f"the adapter's {piece} returned NaN or infinity")
        return x.astype(np.float32)

    def observed(self, piece, out, w, rows=B):
        """What a step reported: its gradients, the target action it used."""
        if out is None:
            return {}
        if not isinstance(out, dict):
            raise UserError(f"the adapter's {piece} must return None or a dict "
                            f"(grads, target_action), got {type(out).__name__}")
        got = {}
        if out.get("grads") is not None:
            if not isinstance(out["grads"], dict):
                raise UserError(f"the adapter's {piece}()['grads'] must be a dict of lists by "
                                f"network (q1, q2, pi), got {type(out['grads']).__name__}")
            got["grads"] = {n: self.arrays(f"{piece}()['grads']['{n}']", g, w[n])
                            for n, g in out["grads"].items() if n in ("pi", "q1", "q2")}
        if out.get("target_action") is not None:
            got["target_action"] = self.array(f"{piece}()['target_action']", out["target_action"],
                                              [(rows, self.dims[1])])
        return got


@contextlib.contextmanager
def quiet(warned):
    """A port's call without its noise in the report: its Python warnings collected in
    ``warned`` (message -> count; main() prints them after the report, once each) and the
    log lines of its libraries (skrl's, TensorFlow's absl) left out."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        logging.disable(logging.NOTSET)
        for w in caught:
            said = f"{w.category.__name__}: {str(w.message).strip().splitlines()[0][:200]}"
            warned[said] = warned.get(said, 0) + 1


@contextlib.contextmanager
def native_stderr_off():
    """File descriptor 2 held aside while a port's frameworks load: what C++ code writes there
    (TensorFlow's absl lines, which its log-level variable does not reach when another library
    imports it). If the load fails, all of it is printed before the error's line: the reason
    may be there (numpy's "compiled using NumPy 1.x", a C++ check). A crash of native code
    takes its lines with it: ``python -c "import <module>"`` shows them."""
    sys.stderr.flush()
    saved = os.dup(2)
    held = tempfile.TemporaryFile()
    os.dup2(held.fileno(), 2)
    try:
        yield
    except BaseException:
        sys.stderr.flush()
        os.dup2(saved, 2)
        held.seek(0)
        sys.stderr.write(held.read().decode(errors="replace"))
        raise
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        held.close()


def read_advice(cls):
    """An adapter's ``advice``: what to change for a named mistake, in its library's terms
    (skrl's ``polyak`` is the paper's tau, so "polyak is 1 - tau" would be backwards there)."""
    advice = getattr(cls, "advice", {})
    if not isinstance(advice, dict) or not all(isinstance(v, str) for v in advice.values()):
        raise UserError("the adapter's advice must be a dict of sentences by mistake name")
    unknown = sorted(set(advice) - set(variants.TABLE))
    if unknown:
        raise UserError(f"the adapter's advice names no known mistake: {', '.join(unknown)} "
                        f"(known: {', '.join(variants.TABLE)})")
    return advice


def read_settings(cls):
    s = getattr(cls, "settings", None)
    if not isinstance(s, dict):
        raise UserError("the adapter must declare settings = dict(gamma=..., tau=... or "
                        "polyak=..., pi_lr=..., q_lr=..., target_noise=..., noise_clip=..., "
                        "policy_delay=...)")
    missing = [k for k in REQUIRED if k not in s] + ([] if "tau" in s or "polyak" in s
                                                      else ["tau or polyak"])
    if missing:
        raise UserError(f"the adapter's settings lack {', '.join(missing)}")
    out = dict(s)
    for k in REQUIRED + ("tau", "polyak", "adam_eps"):
        if k in out and (isinstance(out[k], bool) or not isinstance(out[k], (int, float, np.number))):
            raise UserError(f"the adapter's settings['{k}'] must be a number, got {out[k]!r}")
        if k in out:
            out[k] = float(out[k])
    if out["policy_delay"] < 1 or out["policy_delay"] != int(out["policy_delay"]):
        raise UserError(f"the adapter's settings['policy_delay'] must be a positive integer, "
                        f"got {s['policy_delay']!r}")
    hidden = out.get("hidden_sizes", (256, 256))
    if not isinstance(hidden, (list, tuple)) or not all(isinstance(h, int) and h > 0 for h in hidden):
        raise UserError(f"the adapter's settings['hidden_sizes'] must be a list of layer sizes, "
                        f"got {hidden!r}")
    out.setdefault("polyak", 1 - out["tau"] if "tau" in out else None)
    out.setdefault("adam_eps", 1e-8)
    out["hidden_sizes"] = tuple(out.get("hidden_sizes", (256, 256)))
    return out


# ------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------
class Report:
    def __init__(self, out=print):
        self.out, self.lines, self.named, self.failed, self.unchecked = out, [], [], [], []
        self.noted, self.advice = [], {}
        self.forward_failed = False

    def line(self, status, piece, text):
        if status == "DIFFERS" and "matches:" not in text and self.forward_failed:
            text += " (this may follow from the forward pass that differs above: fix that first)"
        if status in ("DIFFERS", "NOTE") and piece.endswith("forward"):
            self.forward_failed = True  # (a NOTE there: another layout, as (a, s) critics)
        s = f"{status:<11} {piece}: {text}"
        self.lines.append(s)
        self.out(s)
        if status == "DIFFERS":
            self.failed.append(piece)
        elif status == "NOT CHECKED":
            self.unchecked.append(piece)

    def name(self, variant, piece, how="", extra=""):
        """A line naming the known mistake that reproduces the port's numbers: a DIFFERS, or a
        NOTE for a difference that is not a mistake (variants.py's bug=False)."""
        v = variants.TABLE[variant]
        (self.named if v.bug else self.noted).append(variant)
        advice = self.advice.get(variant) or variants.advice(variant)  # the port's terms first
        self.line("DIFFERS" if v.bug else "NOTE", piece, f"matches: {v.label}{how}. What it "
                  f"does: {v.effect}. {advice[0].upper()}{advice[1:]}."
                  + evidence(variant, self.env) + (f" {extra}" if extra else ""))


def evidence(variant, env):
    """What the committed runs with this mistake did, read from their progress.txt."""
    runs = sorted(glob.glob(os.path.join(RESULTS, f"td3-{env}-{variant}", "*", "progress.txt")))
    if not runs:
        return ""
    said = []
    for f in runs:
        t = read_table(f)
        ret, steps = np.asarray(t["AverageTestEpRet"], float), np.asarray(t["TotalEnvInteracts"])
        said.append(f"seed {os.path.basename(os.path.dirname(f)).rsplit('_s', 1)[-1]} best test "
                    f"return {np.nanmax(ret):.0f} in {int(steps[-1]):,} steps")
    return (f" td3.py's runs with it (results/porting; 300 is solved, and a mistake can still "
            f"learn on one env and seed): {'; '.join(said)}.")


def first_match(candidates, port, compare, tol):
    """The first candidate whose numbers are the port's to tolerance: (name, k) or None."""
    for name, ref in candidates:
        k, res = compare(port, ref)
        if res < tol:
            return name, k
    return None


# ------------------------------------------------------------------------------------------
# The pieces
# ------------------------------------------------------------------------------------------
def check(adapter_cls, env_id="BipedalWalker-v3", seed=0, out=print):
    """Check a port's adapter class against td3.py; returns the Report."""
    env = make_env(env_id)()
    if len(env.action_space.shape) != 1 or len(env.observation_space.shape) != 1:
        raise UserError(f"{env_id} needs flat Box observations and actions")
    low, high = env.action_space.low.astype(np.float32), env.action_space.high.astype(np.float32)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    port = Port(adapter_cls, (obs_dim, act_dim, low.copy(), high.copy()))
    s = port.settings
    ref = Reference(env.observation_space, env.action_space, s, seed)
    rep = Report(out)
    rep.env, rep.advice = env_id, read_advice(adapter_cls)
    rng = np.random.default_rng(seed)
    batch = dict(obs=rng.standard_normal((B, obs_dim)), act=rng.uniform(low, high, (B, act_dim)),
                 rew=rng.standard_normal(B), obs2=rng.standard_normal((B, obs_dim)),
                 done=(rng.random(B) < 0.25).astype(np.float64))
    batch = {k: v.astype(np.float32) for k, v in batch.items()}
    normal = rng.standard_normal((B, act_dim)).astype(np.float32)
    normal[::4] *= 3  # a quarter of the draws large, so that trick 3's clip acts on many samples
    unit = bool(np.all(low == -1) and np.all(high == 1))

    settings_lines(rep, s, env)
    forward_passes(rep, port, ref, batch, unit)
    if port.has("done_flag"):
        done_piece(rep, port)
    else:
        rep.line("NOT CHECKED", "done flag", "the adapter has no done_flag(terminated, truncated)")
    a2 = trick3(rep, port, ref, batch, normal, obs_dim, act_dim, unit, rng)
    critic_pieces(rep, port, ref, batch, normal, a2)
    actor_and_targets(rep, port, ref, batch, normal)
    trick2(rep, port, ref, batch, rng, act_dim)
    rep.warned = port.warned
    return rep


def settings_lines(rep, s, env):
    mine = td3.settings_for(env)
    if s["polyak"] < 0.5:
        rep.name("polyak_as_tau", "settings", f" (polyak {s['polyak']:g}: the targets keep "
                 f"{s['polyak']:.1%} of themselves at each step; tau is 1 - polyak)")
    # A trick switched off in the declared settings: not TD3, however the code runs it.
    off = []
    if trick3_off(s):
        off += ["target_noise", "noise_clip"]
        rep.name("no_smoothing", "settings", f" (declared target_noise {s['target_noise']:g}, "
                 f"noise_clip {s['noise_clip']:g}: no noise on the target action)")
    if s["policy_delay"] == 1:
        off.append("policy_delay")
        rep.name("no_delay", "settings", " (declared policy_delay 1: the actor and the targets "
                 "move at every critic update)")
    differ = [f"{k} {s[k]:g} (td3.py: {getattr(mine, k):g})"
              for k in ("gamma", "pi_lr", "q_lr", "target_noise", "noise_clip", "policy_delay")
              if k not in off and not np.isclose(s[k], getattr(mine, k))]
    if not np.isclose(s["polyak"], mine.polyak) and s["polyak"] >= 0.5:
        differ.append(f"polyak {s['polyak']:g} (td3.py: {mine.polyak:g})")
    floor = s.get("reward_floor", "not declared")
    authors = (np.isclose(s["gamma"], 0.99) and np.isclose(s["pi_lr"], 3e-4)
               and np.isclose(s["q_lr"], 3e-4) and floor is None and mine.reward_floor is not None)
    if authors:
        rep.name("authors_defaults", "settings", f" (their discount 0.99 and learning rates 3e-4, "
                 f"no reward floor where td3.py's is {mine.reward_floor:g}): not a mistake of the "
                 "code")
    elif differ:
        rep.line("NOTE", "settings", "differ from td3.py's defaults, and the check runs td3.py "
                 "with the port's: " + ", ".join(differ))
    elif not off:
        rep.line("PASS", "settings", "the same as td3.py's defaults")
    if not np.isclose(s["adam_eps"], 1e-8):
        rep.line("NOTE", "Adam", f"epsilon {s['adam_eps']:g} (torch's 1e-8): a framework's "
                 "default, a small difference on gradients near zero, not a mistake")


def forward_passes(rep, port, ref, batch, unit):
    w = ref.w0
    if port.has("actor"):
        a = port.new(w)
        got = port.array("actor", port.call("actor", a.actor, batch["obs"]),
                         [(B, batch["act"].shape[1])])
        with torch.no_grad():
            want = ref.ac.pi(torch.as_tensor(batch["obs"])).numpy()
            tanh_only = ref.ac.pi.net(torch.as_tensor(batch["obs"])).numpy()
        if rel(got, want) < TOL:
            rep.line("PASS", "actor forward", "pi(s) the same" + (
                "; the env's bounds are +-1, so the scaling to other bounds is not seen "
                "(check with --env Pendulum-v1)" if unit else ", scaled to the env's bounds"))
        elif rel(got, tanh_only) < TOL:
            rep.name("actor_unscaled", "actor forward")
        else:
            rep.line("DIFFERS", "actor forward", differ("pi(s)", got, want)
                     + ": check the layer order, the activations, tanh at the end")
    else:
        rep.line("NOT CHECKED", "actor forward", "the adapter has no actor(obs)")
    if port.has("critics"):
        a = port.new(w)
        out = port.call("critics", a.critics, batch["obs"], batch["act"])
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise UserError("the adapter's critics must return (q1, q2)")
        q1, q2 = (port.array("critics", q, [(B,), (B, 1)]) for q in out)
        shape = q1.shape
        q1, q2 = q1.reshape(B), q2.reshape(B)
        o, act = torch.as_tensor(batch["obs"]), torch.as_tensor(batch["act"])
        with torch.no_grad():
            w1, w2 = ref.ac.q1(o, act).numpy(), ref.ac.q2(o, act).numpy()
            swapped = [ref.ac.q1.net(torch.cat([act, o], -1)).squeeze(-1).numpy(),
                       ref.ac.q2.net(torch.cat([act, o], -1)).squeeze(-1).numpy()]
        if rel(q1, w1) < TOL and rel(q2, w2) < TOL:
            rep.line("PASS", "critics forward", "Q1(s, a) and Q2(s, a) the same" + (
                f" (returned as {shape}: fine where the whole target stays (B, 1))"
                if shape == (B, 1) else ""))
        elif rel(q1, swapped[0]) < TOL and rel(q2, swapped[1]) < TOL:
            rep.name("action_first", "critics forward")
        else:
            rep.line("DIFFERS", "critics forward",
                     differ("Q1", q1, w1) + "; " + differ("Q2", q2, w2))
    else:
        rep.line("NOT CHECKED", "critics forward", "the adapter has no critics(obs, act)")


def done_piece(rep, port):
    a = port.call("__init__", lambda: port.cls(*port.dims))  # no weights needed
    cases = [(False, False), (True, False), (False, True), (True, True)]
    got = [port.call("done_flag", lambda t, u: float(a.done_flag(t, u)), t, u) for t, u in cases]
    want = [td3.done_flag(t, u) for t, u in cases]
    named = [m for m in DONE_FLAG_MISTAKES if got == [getattr(pm, m)(t, u) for t, u in cases]]
    if got == want:
        rep.line("PASS", "done flag", "done = terminated; a time-limit cut is stored as not done")
    elif named:
        rep.name(named[0], "done flag")
    else:
        rep.line("DIFFERS", "done flag", f"(terminated, truncated) -> {got} for {cases}, "
                 f"td3.py's {want}")


def swapped_at(point):
    """The mistakes variants.py runs through this swap point of td3.py, by name."""
    return [name for name, v in variants.TABLE.items()
            if v.kind == "mistake" and v.options and v.options[0] == f"--{point}"]


TARGET_ACTION_MISTAKES = swapped_at("target_action")
DONE_FLAG_MISTAKES = swapped_at("done_flag")


def trick3(rep, port, ref, batch, normal, obs_dim, act_dim, unit, rng):
    """Trick 3's target action; returns the a' the port used on ``batch``, or None (unknown)."""
    piece = "trick 3, target action"
    want = ref.target_action(batch["obs2"], normal).numpy()
    exact = port.takes_noise and port.has("target_action")
    if trick3_off(ref.s) and not exact:
        if port.has("critic_step") or port.has("update"):
            rep.line("NOTE", piece, "the declared settings add no noise (trick 3 is off, said "
                     "above): the a' the critic step reports is compared with pi'(s') below")
        else:
            rep.line("NOT CHECKED", piece, "the declared settings add no noise (trick 3 is off, "
                     "said above), and the adapter has no step to report the a' it used")
        return want
    if exact:
        a = port.new(ref.w0)
        got = port.array("target_action", port.call("target_action", a.target_action,
                                                     batch["obs2"], normal), [(B, act_dim)])
        return target_action_verdict(rep, ref, batch["obs2"], normal, got, want)
    if port.takes_noise and not (port.has("critic_step") or port.has("update")):
        rep.line("NOT CHECKED", piece, "the adapter has no target_action, critic_step or update")
        return want
    if port.takes_noise:
        rep.line("NOTE", piece, "the adapter has no target_action: a' is checked in the critic "
                 "step below, with the same N(0, 1) draws on both sides")
        return want
    # The port draws its own noise: watch it on identical transitions, where the spread of
    # a' over the rows is the noise itself: the row whose pi'(s') lies farthest from a bound.
    pi = ref.target_action(batch["obs2"], np.zeros_like(normal)).numpy()
    room = np.minimum(pi - ref.low.numpy(), ref.high.numpy() - pi).max(axis=1)
    row = int(np.argmax(room))
    same = {k: np.repeat(v[row:row + 1], STATS_B, axis=0) for k, v in batch.items()}
    got = None
    if port.has("target_action"):
        a = port.new(ref.w0)
        got = port.array("target_action", port.call("target_action", a.target_action,
                                                     same["obs2"], None), [(STATS_B, act_dim)])
    else:
        for step in ("critic_step", "update"):
            if port.has(step):
                a = port.new(ref.w0)
                seen = port.observed(step, port.call(step, getattr(a, step), same, None), ref.w0,
                                     STATS_B)
                got = seen.get("target_action")
                break
    if got is None:
        rep.line("NOT CHECKED", piece, "the adapter neither takes the noise (takes_noise) nor "
                 "reports the target action a step used (target_action)")
        return None
    trick3_statistics(rep, piece, got, ref, same, rng, act_dim, unit)
    return None


def target_action_verdict(rep, ref, obs2, normal, got, want, piece="trick 3, target action"):
    """The port's a' against td3.py's for the same N(0, 1) draws: a line (and a NOT CHECKED one
    for each clip this batch did not make act); returns the port's."""
    if rel(got, want) < TOL:
        if trick3_off(ref.s):
            rep.line("PASS", piece, "a' = pi'(s') the same (the declared settings add no noise: "
                     "trick 3 is off, said above)")
            return want
        n_clip, n_bound = trick3_clips(ref, obs2, normal)
        rep.line("PASS", piece, f"a' the same for the same N(0, 1) draws: noise per sample and "
                 f"action dimension, scaled, clipped to +-noise_clip ({n_clip} of {normal.size} "
                 f"draws), a' clipped to the bounds ({n_bound} of {normal.size} values)")
        for n, what in ((n_clip, "the noise's clip: no draw of this batch reached noise_clip"),
                        (n_bound, "the clip to the bounds: no a' of this batch reached a bound")):
            if n == 0:
                rep.line("NOT CHECKED", piece, what)
        return want
    cands = [(m, ref.target_action(obs2, normal, getattr(pm, m)).numpy())
             for m in TARGET_ACTION_MISTAKES]
    cands.append(("no_smoothing", ref.target_action(obs2, 0 * normal).numpy()))
    hit = first_match(cands, got, lambda p, r: (1.0, rel(p, r)), TOL)
    if hit:
        rep.name(hit[0], piece)
    else:
        rep.line("DIFFERS", piece, differ("a'", got, want))
    return got


def trick3_off(s):
    """Whether the declared settings add no noise to the target action."""
    return s["target_noise"] == 0 or s["noise_clip"] == 0


def trick3_clips(ref, obs2, normal):
    """How many of td3.py's noise draws its clip cut, and how many a' values the bounds cut."""
    s, scale = ref.s, ref.scale.numpy()
    pi = ref.target_action(obs2, np.zeros_like(normal)).numpy()
    noise = np.clip(normal * s["target_noise"], -s["noise_clip"], s["noise_clip"]) * scale
    n_clip = int((np.abs(normal * s["target_noise"]) > s["noise_clip"]).sum())
    return n_clip, int(((pi + noise < ref.low.numpy()) | (pi + noise > ref.high.numpy())).sum())


def trick3_statistics(rep, piece, got, ref, same, rng, act_dim, unit):
    mu = ref.target_action(same["obs2"][:1], np.zeros((1, act_dim), np.float32)).numpy()[0]
    want = ref.target_action(same["obs2"], rng.standard_normal((STATS_B, act_dim)).astype(np.float32)).numpy()
    dev, dev_ref = got - mu, want - mu
    scale, low, high = ref.scale.numpy(), ref.low.numpy(), ref.high.numpy()
    c = ref.s["noise_clip"] * scale
    inside = (mu - low > 1.05 * c) & (high - mu > 1.05 * c)  # dims the bounds cannot clip
    std, std_ref = dev.std(0), dev_ref.std(0)
    said = (f"over {STATS_B:,} identical transitions: std of a' - pi'(s') {sample(std, act_dim)}, "
            f"td3.py's {sample(std_ref, act_dim)}")
    tiny = 1e-3 * std_ref  # identical inputs give identical rows up to float noise
    if np.all(np.abs(dev) < 1e-3 * c) and np.all(std_ref > 0):
        rep.name("no_smoothing", piece, " (a' is pi'(s') itself, on every row)")
    elif np.all(std < tiny) and np.all(std_ref > 0):
        rep.name("shared_noise", piece, f" (every row's a' is the same: {said})")
    elif np.any(got < low - 1e-5) or np.any(got > high + 1e-5):
        rep.name("action_unclipped", piece, f" (a' reaches {got.min():.3f} to {got.max():.3f}, "
                 f"the bounds are {low.min():g} to {high.max():g})")
    elif not inside.any():
        rep.line("NOT CHECKED", piece, "the noise's size and clip: every action dimension of this "
                 "state sits within a clip of a bound; a' stays within the bounds and differs per row")
    elif np.any(np.abs(dev[:, inside]) > c[inside] * (1 + 1e-4) + 1e-6):
        rep.name("noise_unclipped", piece, f" (a' moves up to {np.abs(dev[:, inside]).max():.3f}"
                 f" from pi'(s'), the clip is {c[inside].max():g})")
    elif not unit and np.allclose(std[inside], std_ref[inside] / scale[inside], rtol=0.1):
        rep.name("noise_unscaled", piece, f" ({said})")
    elif np.allclose(std[inside], std_ref[inside], rtol=0.1):
        corr = np.corrcoef(dev[:, inside].T) if inside.sum() > 1 else np.eye(1)
        off = np.abs(corr[~np.eye(len(corr), dtype=bool)]).max() if len(corr) > 1 else 0.0
        if off > 0.5:
            rep.line("DIFFERS", piece, f"one noise value per sample, shared by every action "
                     f"dimension (correlation {off:.2f} between dimensions, td3.py's about 0)")
        else:
            rep.line("PASS", piece, "by its statistics (the port draws its own noise): per "
                     f"sample and dimension, clipped, a' within the bounds; {said}")
    else:
        rep.line("DIFFERS", piece, said)


CRITIC_LOSS_MISTAKES = swapped_at("critic_loss")


def critic_pieces(rep, port, ref, batch, normal, a2):
    """Trick 1's target and the critics' step. The step runs first, so that a target action it
    used that differs is said before the pieces it moves (the cause before its knock-on)."""
    step = "critic_step" if port.has("critic_step") else "update" if port.has("update") else None
    piece = "critic loss gradients"
    used = seen = None
    if step:
        a = port.new(ref.w0)
        seen = port.observed(step, port.call(step, getattr(a, step), batch, normal), ref.w0)
        after = port.weights(a, ref.w0)
        used = seen.get("target_action")
        # the step's a' against td3.py's: for the same draws, or with trick 3 off (a' = pi'(s'))
        same_draws = port.takes_noise or trick3_off(ref.s)
        if used is not None and a2 is not None and same_draws and rel(used, a2) >= TOL:
            used = target_action_verdict(rep, ref, batch["obs2"], normal, used, a2,  # trick 3
                                         "trick 3, the target action the step used")
        elif used is not None and a2 is not None and same_draws and \
                not port.has("target_action"):
            target_action_verdict(rep, ref, batch["obs2"], normal, used, a2)
        elif used is None and trick3_off(ref.s) and not port.has("target_action"):
            rep.line("NOT CHECKED", "trick 3, target action", "the step did not report the a' "
                     "it used (return target_action from it)")
    if port.has("td_target"):  # y on td3.py's a' or on the port's own: a' not blamed twice
        own = used if port.takes_noise and used is not None and a2 is not None and \
            rel(used, a2) >= TOL else None  # (a port drawing its own noise draws again)
        target_piece(rep, port, ref, batch, normal, a2, own)
    elif step:
        rep.line("NOTE", "trick 1, TD target", "the adapter has no td_target: the target is "
                 "checked through the critics' gradients below")
    else:
        rep.line("NOT CHECKED", "trick 1, TD target", "the adapter has no td_target, "
                 "critic_step or update")
    if step is None:
        rep.line("NOT CHECKED", piece, "the adapter has no critic_step or update")
        return
    if used is None:
        used = a2
    if used is None:
        rep.line("NOT CHECKED", piece, "the port drew its own noise and did not report the "
                 "target action it used (return target_action from the step)")
        return
    grads = seen.get("grads")
    ref.load(ref.w0)
    want = ref.critic_grads(batch, used)
    lr, eps = port.settings["q_lr"], port.settings["adam_eps"]
    if grads is None or not {"q1", "q2"} <= set(grads):
        rep.line("NOTE", piece, f"the adapter's {step} reports no grads: compared by the "
                 "critics after Adam's step only")
    else:
        critic_gradients(rep, ref, batch, used, grads, want, port.takes_noise, normal)
    # The critics after the optimizer step: Adam's first step from the port's own gradients
    # (else td3.py's), so that this line tests the optimizer and its settings alone.
    src = grads if grads is not None and {"q1", "q2"} <= set(grads) else want
    fits = [adam_steps(ref.w0[n], after[n], src[n], lr, eps) for n in ("q1", "q2")]
    merged = {f: (max(x[0][f][0] for x in fits), sum(x[0][f][1] for x in fits)) for f in EPS_FORMS}
    adam_line(rep, "critics after Adam's step", merged, sum(x[1] for x in fits), lr, eps,
              "the port's" if src is grads else "td3.py's")
    if step == "critic_step":
        others = [n for n in ("pi", "pi_targ", "q1_targ", "q2_targ")
                  if rel(flat(after[n]), flat(ref.w0[n])) > 0]
        if others == ["pi_targ", "q1_targ", "q2_targ"]:
            rep.name("targets_every_step", "critic step", " (the critic step moved every target)")
        elif others:
            rep.line("DIFFERS", "critic step", f"it also moved {', '.join(others)}: a critic step "
                     "moves the critics only")


def critic_gradients(rep, ref, batch, used, grads, want, exact_noise, normal):
    piece = "critic loss gradients"
    per = {n: scale_fit(grads[n], want[n]) for n in ("q1", "q2")}
    if all(res < GRAD_TOL and abs(k - 1) < 1e-3 for k, res in per.values()):
        rep.line("PASS", "trick 1, TD target and critic loss", "both critics' gradients the same "
                 f"(largest difference {max(r for _, r in per.values()):.1e} of the largest "
                 "gradient): one target, min(Q1', Q2'), (1 - d), the discount, the shapes")
        return
    cands = [("td3", want)]
    for m in CRITIC_LOSS_MISTAKES:
        cands.append((m, ref.critic_grads(batch, used, getattr(pm, m))))  # summed_loss: as td3 x B
    cands.append(("live_target", ref.critic_grads(
        batch, ref.target_action(batch["obs2"], normal, live=True).numpy()
        if exact_noise else used, live=True)))
    a2s = [(m, ref.target_action(batch["obs2"], normal, getattr(pm, m)).numpy())
           for m in TARGET_ACTION_MISTAKES] + [
        ("no_smoothing", ref.target_action(batch["obs2"], 0 * normal).numpy())] if exact_noise else []
    cands += [(m, ref.critic_grads(batch, a2)) for m, a2 in a2s]
    hits = {n: first_match([(m, g[n]) for m, g in cands], grads[n], scale_fit, GRAD_TOL)
            for n in ("q1", "q2")}
    if None in hits.values() and a2s:  # two mistakes at once: the target action's and the loss's
        pairs = [(f"{t}+{m}", ref.critic_grads(batch, a2, getattr(pm, m)))
                 for t, a2 in a2s for m in CRITIC_LOSS_MISTAKES]
        hits = {n: hits[n] or first_match([(m, g[n]) for m, g in pairs], grads[n], scale_fit,
                                          GRAD_TOL) for n in hits}
    same = hits["q1"] is not None and hits["q2"] is not None and \
        hits["q1"][0] == hits["q2"][0] and abs(hits["q1"][1] - hits["q2"][1]) < 1e-3 * abs(hits["q1"][1])
    for nets in ((("q1", "q2"),) if same else (("q1",), ("q2",))):
        hit, n = hits[nets[0]], nets[0]
        piece = "both critics' gradients" if same else f"{n.upper()}'s gradients"
        if hit is None:
            rep.line("DIFFERS", piece, "no known mistake reproduces them: "
                     + differ("gradients", flat(grads[n]), flat(want[n]), are="are",
                              tol=GRAD_TOL))
            continue
        m, k = hit
        summed = abs(k - B) < 1e-2 * B
        if m == "td3" and abs(k - 1) < 1e-3:
            rep.line("PASS", piece, "the same")
        elif m == "td3" and summed:
            rep.name("summed_loss", piece, extra=adam_effect(ref, want[n], k) + ".")
        elif m == "td3" and k > 0:
            rep.line("NOTE", piece, f"{k:.4g} times td3.py's (the loss weighted so: halved, or "
                     f"the critics' losses averaged): {adam_effect(ref, want[n], k)}")
        elif m == "td3":
            rep.line("DIFFERS", piece, f"{k:.4g} times td3.py's: check the loss's sign and weighting")
        else:
            extra = "" if abs(k - 1) < 1e-3 else f"Also, the loss is {k:.4g} times td3.py's" + (
                ": summed over the batch, not averaged. " + adam_effect(ref, want[n], k) if summed else ".")
            for i, part in enumerate(m.split("+")):  # a pair: one line each, the factor once
                rep.name(part, piece, extra=extra if i == len(m.split("+")) - 1 else "")
            if summed and "summed_loss" not in rep.named:
                rep.named.append("summed_loss")


def adam_effect(ref, g, k):
    """What a k-times larger gradient does to Adam's first step here, measured."""
    lr, eps = ref.s["q_lr"], ref.s.get("adam_eps", 1e-8)
    d = np.concatenate([np.ravel(np.abs(adam_first_step(np.zeros_like(x), k * x, lr, eps)
                                        - adam_first_step(np.zeros_like(x), x, lr, eps)))
                        for x in g]) / lr
    return (f"Under Adam, measured on this batch, the median weight's first step changes by "
            f"{np.median(d):.1e} of the learning rate (at most {d.max():.2f}, on gradients near "
            "Adam's epsilon): Adam divides the scale out, where plain SGD would step "
            f"{k:.3g} times as far")


def target_piece(rep, port, ref, batch, normal, a2, own=None):
    """y against td3.py's on the same a' (``a2``), or on the a' the port's step used (``own``,
    where that differed): the port's td_target may build its a' either way."""
    piece = "trick 1, TD target"
    a = port.new(ref.w0)
    got = port.array("td_target", port.call("td_target", a.td_target, batch, normal),
                     [(B,), (B, 1), (B, B)])
    if got.shape == (B, B):
        rep.name("column_critics", piece, f" (the target is {got.shape})")
        return
    used = a2 if a2 is not None else None
    if used is None:
        rep.line("NOT CHECKED", piece, "the port drew its own noise (takes_noise False)")
        return
    want = ref.td_target(batch, used)
    column, got = got.ndim == 2, got.reshape(B)
    if own is not None and rel(got, want) >= TOL and rel(got, ref.td_target(batch, own)) < TOL:
        used, want = own, ref.td_target(batch, own)  # y on the step's own a' (said above)
    if rel(got, want) < TOL:
        rep.line("PASS", piece, "y = r + gamma * (1 - d) * min(Q1', Q2') from the target "
                 "networks" + (" (returned as (B, 1): fine where both sides are)"
                               if column else ""))
        return
    t = torch.as_tensor
    o2 = t(batch["obs2"])
    with torch.no_grad():
        q1t, q2t = ref.ac_targ.q1(o2, t(used)), ref.ac_targ.q2(o2, t(used))
        r, d, g = t(batch["rew"]), t(batch["done"]), ref.s["gamma"]
        m = torch.min(q1t, q2t)
        cands = [("no_min", (r + g * (1 - d) * q1t).numpy()),
                 ("done_ignored", (r + g * m).numpy()),
                 ("done_inverted", (r + g * d * m).numpy()),
                 ("discount_on_done", (r + (1 - g * d) * m).numpy()),
                 ("live_target", ref.td_target(batch, used, live=True))]
    hit = first_match(cands, got, lambda p, q: (1.0, rel(p, q)), TOL)
    if hit:
        rep.name(hit[0], piece)
    else:
        rep.line("DIFFERS", piece, differ("y", got, want) + "; "
                 + which_term(got, r.numpy(), d.numpy(), m.numpy(), g))


def which_term(y, r, d, m, gamma):
    """Where a TD target departs from r + gamma * (1 - d) * m (m = min(Q1', Q2')): y fitted as
    a * r + b * (1 - d) * m + c * d * m + e, each factor set against td3.py's (1, gamma, 0, 0)."""
    x = np.stack([r, (1 - d) * m, d * m, np.ones_like(r)], axis=1).astype(np.float64)
    coef, *_ = np.linalg.lstsq(x, y.astype(np.float64), rcond=None)
    if np.max(np.abs(x @ coef - y)) > 1e-3 * max(np.max(np.abs(y)), 1e-8):
        return ("y is no sum of r and min(Q1', Q2') with one factor on each: check the target's "
                "shapes and which networks it uses")
    terms = [("the reward", coef[0], 1.0), ("the bootstrap term (1 - d) min(Q1', Q2')", coef[1], gamma),
             ("the term a done flag should zero, d min(Q1', Q2')", coef[2], 0.0),
             ("a constant", coef[3], 0.0)]
    off = [f"{what}: factor {k:.5g}, td3.py's {want:.5g}" for what, k, want in terms
           if abs(k - want) > 1e-4 * max(abs(want), 1)]
    return "y departs in " + "; ".join(off) if off else "y has td3.py's terms"


def actor_and_targets(rep, port, ref, batch, normal):
    """The actor's step on the live critics, and one Polyak step of the targets."""
    if port.has("actor_step"):
        a = port.new(ref.w0)
        seen = port.observed("actor_step", port.call("actor_step", a.actor_step, batch), ref.w0)
        after = port.weights(a, ref.w0)
        check_actor(rep, port, ref, batch, ref.w0, after, seen.get("grads"))
        if any(rel(flat(after[n]), flat(ref.w0[n])) > 0 for n in ("q1", "q2")):
            rep.line("DIFFERS", "actor step", "it also moved the critics: the actor's loss must "
                     "step the actor's weights only")
    elif not port.has("update"):
        rep.line("NOT CHECKED", "trick 2, actor step", "the adapter has no actor_step or update")
    if port.has("sync_targets"):
        a = port.new(ref.w0)
        port.call("sync_targets", a.sync_targets)
        check_polyak(rep, port, ref.w0, port.weights(a, ref.w0), ref.w0)
    elif not port.has("update"):
        rep.line("NOT CHECKED", "trick 2, Polyak step", "the adapter has no sync_targets or update")


def check_actor(rep, port, ref, batch, before, after, grads):
    """The actor climbs Q1(s, pi(s)) at the critics it was given (``after``'s critics)."""
    piece = "trick 2, actor step"
    w = {**before, "q1": after["q1"], "q2": after["q2"]}
    ref.load(w)
    want = ref.actor_grads(batch)["pi"]
    lr, eps = port.settings["pi_lr"], port.settings["adam_eps"]
    grads = grads if grads is not None and "pi" in grads else None
    if grads is not None:
        k, res = scale_fit(grads["pi"], want)
        if res < GRAD_TOL and abs(k - 1) < 1e-3:
            rep.line("PASS", piece, "the actor's gradients the same: it climbs Q1(s, pi(s))")
        else:
            cands = [("actor_on_min", ref.actor_grads(batch, "min")["pi"]),
                     ("actor_on_q2", ref.actor_grads(batch, "q2")["pi"]), ("td3", want)]
            if any(rel(flat(after[n]), flat(before[n])) > 0 for n in ("q1", "q2")):
                ref.load(before)  # the critics before this update's critic step
                cands.insert(0, ("actor_before_critic_step", ref.actor_grads(batch)["pi"]))
                ref.load(w)
            hit = first_match(cands, grads["pi"], scale_fit, GRAD_TOL)
            if hit and hit[1] < 0:
                rep.name("actor_descends", piece)
            elif hit and hit[0] != "td3":
                rep.name(hit[0], piece)
            elif hit:
                rep.line("DIFFERS", piece, f"the actor's gradients are {hit[1]:.4g} times "
                         "td3.py's: check the actor loss's weighting (a mean over the batch)")
            else:
                rep.line("DIFFERS", piece, "no known mistake reproduces the actor's gradients: "
                         + differ("gradients", flat(grads["pi"]), flat(want), are="are",
                                  tol=GRAD_TOL))
        src = grads["pi"]
    else:
        src = want
    if grads is not None:  # the gradients were judged above; now the step taken with them
        adam_line(rep, "trick 2, the actor's Adam step", *adam_steps(before["pi"], after["pi"],
                                                                      src, lr, eps), lr, eps, "its own")
        return
    moved = [(w1 - w0) for w0, w1 in zip(before["pi"], after["pi"])]
    steps = [adam_first_step(w0, g, lr, eps) - w0 for w0, g in zip(before["pi"], src)]
    clear = [above_noise(g) for g in src]
    agree = [np.sign(m[c]) == np.sign(s_[c]) for m, s_, c in zip(moved, steps, clear)]
    frac = float(np.mean(np.concatenate(agree))) if agree else 1.0
    if grads is None:  # no gradients reported: which way each clear weight moved
        if frac > 0.99:
            rep.line("PASS", piece, f"the actor stepped the way Adam on td3.py's gradients would "
                     f"({frac:.1%} of the clear weights): it climbs Q1(s, pi(s))")
            adam_line(rep, "trick 2, the actor's Adam step", *adam_steps(
                before["pi"], after["pi"], src, lr, eps), lr, eps, "td3.py's")
            return
        cands = {m: ref.actor_grads(batch, o)["pi"] for m, o in (("actor_on_min", "min"),
                                                                ("actor_on_q2", "q2"))}
        cands["actor_descends"] = [-g for g in want]
        agree = {m: float(np.mean(np.concatenate([np.sign(x[c]) == -np.sign(g[c])
                                                  for x, g, c in zip(moved, cands[m], clear)])))
                 for m in cands}
        best = max(agree, key=agree.get)
        if agree[best] > 0.99:
            rep.name(best, piece, f" ({agree[best]:.1%} of the actor's clear weights moved as "
                     "it would)")
        else:
            rep.line("DIFFERS", piece, f"only {frac:.1%} of the actor's clear weights moved as "
                     "Adam on td3.py's gradients would, and no known mistake explains it")


def check_polyak(rep, port, before, after, live, piece="trick 2, Polyak step"):
    """targ_new = targ_old + w * (net - targ_old): w is 1 - polyak, for every target network."""
    want = 1 - port.settings["polyak"]
    fits = {}
    for n in ("pi", "q1", "q2"):
        t0, t1, net = flat(before[n + "_targ"]), flat(after[n + "_targ"]), flat(live[n])
        d = net - t0
        w = float((t1 - t0) @ d / max(d @ d, 1e-30))
        fits[n] = (w, float(np.max(np.abs(t1 - t0 - w * d)) / max(np.max(np.abs(w * d)), 1e-12)))
    ok = all(abs(w - want) < 1e-3 * max(want, 1e-3) + 1e-6 and r < 1e-2 for w, r in fits.values())
    said = ", ".join(f"{n}' {w:.4g}" for n, (w, _) in fits.items())
    if ok:
        rep.line("PASS", piece, f"each target moved {want:.4g} of the way to its network "
                 f"(polyak {1 - want:.4g}): {said}")
    elif all(abs(w - (1 - want)) < 1e-3 for w, _ in fits.values()):
        rep.name("polyak_as_tau", piece, f" (each target moved {said} of the way, td3.py's "
                 f"{want:.4g}: tau and 1 - tau swapped in the average)")
    else:
        rep.line("DIFFERS", piece, f"the targets moved {said} of the way to their networks, "
                 f"td3.py's {want:.4g} (1 - polyak)")


def trick2(rep, port, ref, batch, rng, act_dim):
    """Four whole updates: on the ones the delay skips, the actor and targets stay still."""
    piece = "trick 2, the delay"
    if not port.has("update"):
        rep.line("NOT CHECKED", piece, "the adapter has no update (the port's own whole update, "
                 "which counts the delay): check that the port's loop moves the actor and the "
                 "targets once per policy_delay critic updates")
        return
    a = port.new(ref.w0)
    w, moved, delay = ref.w0, [], int(port.settings["policy_delay"])
    for k in range(1, 5):
        normal = rng.standard_normal((B, act_dim)).astype(np.float32)
        seen = port.observed("update", port.call("update", a.update, batch, normal), ref.w0)
        w1 = port.weights(a, ref.w0)
        moved.append({n: rel(flat(w1[n]), flat(w[n])) > 0 for n in NETS})
        if moved[-1]["pi"] and not any(m["pi"] for m in moved[:-1]) and not port.has("actor_step"):
            check_actor(rep, port, ref, batch, w, w1, seen.get("grads"))
            if not port.has("sync_targets"):
                check_polyak(rep, port, w, w1, w1)
        w = w1
    pi = [m["pi"] for m in moved]
    if not any(pi):
        for left, has in (("trick 2, actor step", "actor_step"), ("trick 2, Polyak step", "sync_targets")):
            if not port.has(has):
                rep.line("NOT CHECKED", left, "the actor never moved in four updates")
    targ = [all(m[n] for n in ("pi_targ", "q1_targ", "q2_targ")) for m in moved]
    any_targ = [any(m[n] for n in ("pi_targ", "q1_targ", "q2_targ")) for m in moved]
    critics = [m["q1"] and m["q2"] for m in moved]
    want = [k % delay == 0 for k in range(1, 5)]
    said = ("updates 1-4 moved the actor " + "".join("x" if p else "." for p in pi)
            + ", the targets " + "".join("x" if t else "." for t in any_targ) + " (x: moved)")
    if not all(critics):
        rep.line("DIFFERS", piece, f"not every update moved both critics ({said})")
    elif delay == 1 and pi == want and targ == want and any_targ == want:
        rep.line("NOT CHECKED", piece, f"{said}, as declared: policy_delay 1 leaves no update "
                 "to skip (trick 2 is off, said above)")
    elif pi == want and targ == want and any_targ == want:
        rep.line("PASS", piece, f"{said}: the actor and every target once per {delay} "
                 "critic updates, still on the others")
    elif any_targ == [True] * 4 and pi == want and delay > 1:
        rep.name("targets_every_step", piece, f" ({said})")
    elif pi == [True] * 4 and delay > 1:
        rep.line("DIFFERS", piece, f"{said}: policy_delay {delay} is declared, but the actor moves "
                 "at every update (trick 2 off: " + variants.TABLE["no_delay"].effect + ")")
    elif pi == targ == any_targ and sum(pi) == sum(want):
        rep.line("PASS", piece, f"{said}: once per {delay}, at another phase than td3.py's "
                 "(which moves them on the second); the same trick")
    else:
        rep.line("DIFFERS", piece, f"{said}; td3.py's " + "".join("x" if x else "." for x in want))


# ------------------------------------------------------------------------------------------
def load_adapter(spec):
    """``module:Class`` or ``path/to/file.py:Class``."""
    module, _, name = spec.rpartition(":")
    if module.endswith(".py"):
        if not os.path.isfile(module):
            raise UserError(f"{module} does not exist")
        sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
        spec_ = importlib.util.spec_from_file_location(os.path.basename(module)[:-3], module)
        mod = importlib.util.module_from_spec(spec_)
        try:
            spec_.loader.exec_module(mod)
        except Exception as e:
            raise UserError(f"cannot load {module}: {type(e).__name__}: {e}") from None
        if not hasattr(mod, name):
            raise UserError(f"{module} has no {name}")
        return getattr(mod, name)
    sys.path.insert(0, os.getcwd())
    return load_function(spec)


def main(argv=None):
    p = ArgumentParser(description="Check a TD3 port's update against td3.py's, piece by piece, "
                                   "on the same weights and batch (docs/check_port.md).",
                       allow_abbrev=False)
    p.add_argument("adapter", help="the port's adapter: module:Class or file.py:Class")
    p.add_argument("--env", default="BipedalWalker-v3",
                   help="the env whose spaces and bounds the networks get (default BipedalWalker-v3)")
    p.add_argument("--seed", type=int, default=0, help="the weights', the batch's and the noise's")
    args = p.parse_args(argv)
    start = time.perf_counter()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ info lines: not ours
    with quiet({}), native_stderr_off():  # what importing a port's frameworks prints (their
        cls = load_adapter(args.adapter)     # warnings, TensorFlow's C++ lines) is not the port's
    print(f"checking {args.adapter} against td3.py on {args.env} (batch {B})", flush=True)
    rep = check(cls, args.env, args.seed, out=lambda s: print(s, flush=True))
    named = ", ".join(variants.TABLE[m].label for m in rep.named)
    noted = ", ".join(variants.TABLE[m].label for m in rep.noted)
    print(f"{len(rep.failed)} piece(s) differ" + (f"; mistakes named: {named}" if named else "")
          + (f"; noted, not mistakes: {noted}" if noted else "")
          + (f"; not checked: {', '.join(rep.unchecked)}" if rep.unchecked else "")
          + f" ({time.perf_counter() - start:.1f} s)")
    for said, n in rep.warned.items():  # after the report, once each
        print(f"the port warned while it ran: {said}" + (f" ({n} times)" if n > 1 else ""))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    run_main(main)
