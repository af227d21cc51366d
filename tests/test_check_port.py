"""check_port.py: td3.py and Stable-Baselines3's TD3 pass every piece; each known mistake, as a
drop-in in td3.py or a switch in the TensorFlow port, is named, and only it; a broken adapter
is one line and exit 2; a piece an adapter lacks is not checked, never passed."""
import importlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import check_port
import core
import variants
from notebooks import port_mistakes as pm
from notebooks import td3_port

ROOT = check_port.os.path.dirname(check_port.os.path.dirname(check_port.os.path.abspath(__file__)))
INSTALL = "pip install -r requirements-ports.txt"


def need(module):
    """The module, or a skip that names the one command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip(f"needs {module}: {INSTALL}")


def check(cls, env="BipedalWalker-v3"):
    lines = []
    rep = check_port.check(cls, env, out=lines.append)
    return rep, "\n".join(lines)


def status(out, piece):
    return [line[:11].strip() for line in out.splitlines() if line[12:].startswith(f"{piece}:")]


def test_td3_passes_every_piece():
    rep, out = check(td3_port.Adapter)
    assert rep.failed == [] and rep.named == [] and rep.unchecked == [], out
    for piece in ("actor forward", "critics forward", "done flag", "trick 3, target action",
                  "trick 1, TD target and critic loss", "critics after Adam's step",
                  "trick 2, actor step", "trick 2, Polyak step", "trick 2, the delay"):
        assert status(out, piece) == ["PASS"], (piece, out)


# Every drop-in of port_mistakes.py, from the variants table: named, and nothing else.
SWAPS = [(name, v.options[0][2:], v.options[1].split(":")[1]) for name, v in variants.TABLE.items()
         if v.options and v.options[0] in ("--critic_loss", "--target_action", "--done_flag")]


def test_every_drop_in_is_in_the_table():
    assert {fn for _, _, fn in SWAPS} == {n for n in dir(pm) if callable(getattr(pm, n))
                                          and getattr(getattr(pm, n), "__module__", "") == pm.__name__}


@pytest.mark.parametrize("name,point,fn", SWAPS, ids=[s[0] for s in SWAPS])
def test_each_drop_in_is_named_and_only_it(name, point, fn):
    env = "Pendulum-v1" if name == "noise_unscaled" else "BipedalWalker-v3"  # bounds of +-2
    rep, out = check(td3_port.with_swaps(**{point: getattr(pm, fn)}), env)
    assert rep.named == [name], out
    assert rep.failed and f"matches: {variants.TABLE[name].label}" in out


@pytest.mark.parametrize("settings,name", [(dict(polyak=0.005), "polyak_as_tau"),
                                           (dict(gamma=0.99, pi_lr=3e-4, q_lr=3e-4, reward_floor=None),
                                            "authors_defaults")])
def test_the_settings_mistakes_are_named_as_settings(settings, name):
    rep, out = check(td3_port.with_settings(**settings))
    assert rep.named + rep.noted == [name], out
    # tau as polyak fails the check; the authors' values are a note, not a mistake of the code
    assert (rep.failed == ["settings"]) == (name == "polyak_as_tau"), out
    assert "results/porting" in out  # what the committed runs of it did, read from them


def test_a_summed_loss_is_said_with_what_adam_makes_of_it():
    rep, out = check(td3_port.with_swaps(critic_loss=pm.summed_loss))
    line = next(l for l in out.splitlines() if "matches: the critic loss summed" in l)
    assert "Under Adam, measured on this batch" in line and "SGD would step 256 times" in line


def test_trick_3_switched_off_is_named_through_the_gradients_and_by_statistics():
    class Unsmoothed(td3_port.Adapter):  # no target_action piece: seen through the gradients
        swaps = {"target_action": lambda pi, *args, normal=None: pi}
        target_action = None
    rep, out = check(Unsmoothed)
    assert rep.named == ["no_smoothing"], out
    rep, out = check(type("Stats", (Unsmoothed,), {"takes_noise": False}))
    assert rep.named == ["no_smoothing"], out


def test_the_scaling_to_the_bounds_is_said_unchecked_on_unit_bounds():
    _, out = check(td3_port.Adapter)
    assert "the scaling to other bounds is not seen" in out
    _, out = check(td3_port.Adapter, "Pendulum-v1")
    assert "scaled to the env's bounds" in out


# ---- the TensorFlow port in the classic port's shape ----
@pytest.fixture(scope="module")
def tf_port():
    need("tensorflow")
    from notebooks import tf_port
    return tf_port


def test_the_tensorflow_port_fixed_passes(tf_port):
    rep, out = check(tf_port.with_mistakes())
    assert rep.failed == [] and rep.named == rep.noted == [] and rep.unchecked == [], out
    assert "epsilon 1e-07 (torch's 1e-8)" in out  # Keras's Adam: a note, not a mistake


def test_the_classic_port_has_each_of_its_mistakes_named(tf_port):
    rep, out = check(tf_port.SeedPort)
    assert sorted(rep.named + rep.noted) == sorted(tf_port.SEED_MISTAKES), out
    assert status(out, "done flag") == ["DIFFERS"]


@pytest.mark.parametrize("mistake", [
    "authors_defaults", "q2_own_target", "q2_next_value", "column_critics", "shared_noise",
    "truncation_as_death", "polyak_as_tau", "summed_loss", "no_min", "done_ignored",
    "discount_on_done", "noise_unclipped", "action_unclipped", "noise_unscaled", "live_target",
    "targets_every_step", "actor_on_min", "actor_on_q2", "actor_descends", "actor_unscaled",
    "action_first"])
def test_each_switch_of_the_tensorflow_port_is_named_and_only_it(tf_port, mistake):
    assert mistake in tf_port.MISTAKES
    env = "Pendulum-v1" if mistake in ("noise_unscaled", "actor_unscaled") else "BipedalWalker-v3"
    rep, out = check(tf_port.with_mistakes(mistake), env)
    assert rep.named + rep.noted == [mistake], out
    # a difference that is not a mistake (the paper's settings or variants) is a note; a critic
    # of another layout is one too, but the pieces after it cannot be compared until the
    # adapter swaps its weights
    if mistake != "action_first":
        assert (rep.failed == []) == (not variants.TABLE[mistake].bug), out


def test_stable_baselines3_passes_every_piece():
    need("stable_baselines3")
    from notebooks import sb3_port
    rep, out = check(sb3_port.Adapter)
    assert rep.failed == [] and rep.named == [] and rep.unchecked == [], out
    # SB3 draws its own target noise: trick 3 is seen by its statistics
    assert "by its statistics" in out and status(out, "trick 3, target action") == ["PASS"]


# ---- a broken adapter: one line, exit 2; a missing piece is not checked ----
class Broken(td3_port.Adapter):
    pass


def run(spec, *args):
    p = subprocess.run([sys.executable, "check_port.py", spec, *args], cwd=ROOT,
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("attr,fn,said", [
    ("critics", lambda self, o, a: 1 / 0, "the adapter's critics raised ZeroDivisionError"),
    ("actor", lambda self, o: np.zeros((3, 2)), "the adapter's actor returned shape (3, 2), "
                                               "expected (256, 4)"),
    ("actor", lambda self, o: np.full((len(o), 4), np.nan), "the adapter's actor returned NaN"),
    ("get_weights", lambda self: {"pi": []}, "the adapter's get_weights must return a dict with"),
    ("settings", dict(gamma=0.99), "the adapter's settings lack pi_lr"),
])
def test_a_broken_adapter_is_one_line_naming_the_piece(attr, fn, said):
    cls = type("Bad", (td3_port.Adapter,), {attr: fn})
    with pytest.raises(check_port.UserError, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        check(cls)


def test_the_command_line_says_a_broken_adapter_in_one_line(tmp_path):
    f = tmp_path / "adapter.py"
    f.write_text("from notebooks.td3_port import Adapter as Base\n"
                 "class Adapter(Base):\n"
                 "    def done_flag(self, terminated, truncated):\n"
                 "        raise RuntimeError('not written yet')\n")
    code, out, err = run(f"{f}:Adapter")
    assert code == 2 and err.strip() == ("error: the adapter's done_flag raised RuntimeError: "
                                         "not written yet"), err
    code, _, err = run("no_such_module:Adapter")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot load" in err


def test_pieces_the_adapter_lacks_are_not_checked_not_passed():
    cls = type("Few", (), {"settings": td3_port.Adapter.settings, "__init__": td3_port.Adapter.__init__,
                           "get_weights": td3_port.Adapter.get_weights, "nets": td3_port.Adapter.nets,
                           "set_weights": td3_port.Adapter.set_weights,
                           "actor": td3_port.Adapter.actor})
    rep, out = check(cls)
    assert status(out, "actor forward") == ["PASS"]
    for piece in ("critics forward", "done flag", "trick 3, target action", "trick 2, the delay"):
        assert status(out, piece) == ["NOT CHECKED"], (piece, out)
    assert rep.failed == []


def test_the_command_exits_1_on_a_mistake_and_prints_as_it_goes(tmp_path):
    f = tmp_path / "adapter.py"
    f.write_text("from notebooks import port_mistakes\nfrom notebooks.td3_port import with_swaps\n"
                 "Adapter = with_swaps(critic_loss=port_mistakes.q2_own_target)\n")
    code, out, err = run(f"{f}:Adapter")
    assert code == 1, err
    assert out.splitlines()[0].startswith("checking ") and "mistakes named: Q2 regressing onto its own target" in out


@pytest.mark.parametrize("mistake", ["noise_unclipped", "action_unclipped", "shared_noise"])
def test_a_port_that_draws_its_own_noise_has_its_noise_mistakes_named_by_statistics(mistake):
    own = type("Own", (td3_port.Adapter,), {"takes_noise": False, "target_action": None,
                                            "swaps": {"target_action": getattr(pm, mistake)}})
    rep, out = check(own)
    assert rep.named == [mistake], out


class Split(td3_port.Adapter):
    """A port whose target_action method is right while its update clips no noise."""
    swaps = {"target_action": pm.noise_unclipped}

    def target_action(self, obs2, normal):  # td3.py's, not what the update uses
        self.swaps = {}
        try:
            return td3_port.Adapter.target_action(self, obs2, normal)
        finally:
            del self.swaps


def test_a_step_whose_target_action_differs_from_its_target_action_method_is_caught():
    """The port's own target_action is right, its update uses another a': the step is judged."""
    rep, out = check(Split)
    assert rep.named == ["noise_unclipped"], out


def test_gradients_without_the_actor_still_judge_the_actor_step():
    class NoPi(td3_port.Adapter):
        def update(self, batch, normal):
            out = super().update(batch, normal)
            out["grads"].pop("pi", None)
            return out
    rep, out = check(NoPi)
    assert status(out, "trick 2, actor step") == ["PASS"], out


# ---- a PASS only where the piece was exercised ----
def test_a_prime_not_clipped_to_one_dimensional_bounds_is_named():
    """On Pendulum-v1 (one action dimension) the reference target actor reaches the bounds
    on some rows, so the clip of a' acts and its absence is named."""
    rep, out = check(td3_port.with_swaps(target_action=pm.action_unclipped), "Pendulum-v1")
    assert rep.named == ["action_unclipped"], out
    rep, out = check(td3_port.Adapter, "Pendulum-v1")
    line = next(ln for ln in out.splitlines() if ln[12:].startswith("trick 3, target action:"))
    clipped = [int(x) for x in __import__("re").findall(r"\((\d+) of \d+ (?:draws|values)\)", line)]
    assert rep.failed == [] and len(clipped) == 2 and min(clipped) > 0, out


def _adam_port(factor):
    import torch

    class Port(td3_port.Adapter):
        settings = {**td3_port.Adapter.settings, "adam_eps": 1e-4}

        def set_weights(self, w):
            super().set_weights(w)
            real = torch.optim.Adam

            def adam(params, lr, **kw):  # the port's own optimizer: eps 1e-4, lr times factor
                return real(params, lr=lr * factor, eps=1e-4)
            self._adam = adam

        def update(self, batch, normal):
            real = torch.optim.Adam
            torch.optim.Adam = self._adam
            try:
                return super().update(batch, normal)
            finally:
                torch.optim.Adam = real
    return Port


def test_a_large_adam_epsilon_still_compares_the_step():
    """With epsilon 1e-4 every gradient lies below the old float-noise threshold, and a port
    stepping at 10 times its learning rate passed; both optimizer lines now compare weights."""
    rep, out = check(_adam_port(10.0))
    assert "critics after Adam's step" in rep.failed and "trick 2, the actor's Adam step" in rep.failed, out
    rep, out = check(_adam_port(1.0))
    assert rep.failed == [] and "over" in next(l for l in out.splitlines()
                                                if "critics after Adam's step" in l), out


@pytest.mark.parametrize("settings,name", [(dict(target_noise=0.0), "no_smoothing"),
                                           (dict(noise_clip=0.0), "no_smoothing"),
                                           (dict(policy_delay=1), "no_delay")])
def test_a_trick_switched_off_by_the_declared_settings_is_named(settings, name):
    """A port that declares a trick off honestly (skrl's default: no target smoothing) is not
    TD3: named in the settings line, exit 1, and no PASS line claims the trick."""
    rep, out = check(td3_port.with_settings(**settings))
    assert rep.named == [name] and rep.failed == ["settings"], out
    claim = {"no_delay": "once per 1 critic updates", "no_smoothing": "scaled, clipped"}[name]
    assert claim not in out, out


# ---- what it names now: two mistakes at once, a mistake on no list, a loop's order ----
def done_inverted_summed(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    return pm.done_inverted(q1, q2, r, d, q1_targ, q2_targ, gamma) * check_port.B


def test_a_mistake_with_a_summed_loss_is_named_with_the_factor():
    rep, out = check(td3_port.with_swaps(critic_loss=done_inverted_summed))
    assert set(rep.named) == {"done_inverted", "summed_loss"}, out


class _TwoMistakes(td3_port.with_swaps(target_action=pm.shared_noise, critic_loss=pm.q2_own_target)):
    """Two mistakes, and an adapter that reports neither a' nor a target_action method: both
    are seen in the critics' gradients only."""
    target_action = None

    def update(self, batch, normal):
        return dict(super().update(batch, normal), target_action=None)


def test_two_mistakes_at_once_are_both_named():
    rep, out = check(_TwoMistakes)
    assert set(rep.named) == {"shared_noise", "q2_own_target"}, out
    assert "no known mistake" not in out, out


def squared_discount(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    y = r + gamma ** 2 * (1 - d) * torch.min(q1_targ, q2_targ)
    return ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()


class _SquaredDiscount(td3_port.with_swaps(critic_loss=squared_discount)):
    """A port whose discount is squared (on no list), reporting its TD target."""

    def td_target(self, batch, normal):
        with torch.no_grad():
            o2 = torch.as_tensor(batch["obs2"])
            a2 = torch.as_tensor(self.target_action(batch["obs2"], normal))
            m = torch.min(self.ac_targ.q1(o2, a2), self.ac_targ.q2(o2, a2))
            d = torch.as_tensor(batch["done"])
            return (torch.as_tensor(batch["rew"]) + 0.98 ** 2 * (1 - d) * m).numpy()


def test_a_mistake_on_no_list_is_pointed_at_the_term_of_y_it_changes():
    rep, out = check(_SquaredDiscount)
    line = next(l for l in out.splitlines() if l[12:].startswith("trick 1, TD target:"))
    assert line.startswith("DIFFERS") and "the bootstrap term" in line and "0.9604" in line, line
    assert "the reward" not in line.split("departs in")[1], line  # only the term that changed


class _LostTargets(td3_port.Adapter):
    """An adapter whose set_weights rebuilds the targets from the live networks, as a port's
    own API may: the checker's targets are lost."""

    def set_weights(self, w):
        super().set_weights(w)
        self.ac_targ.load_state_dict(self.ac.state_dict())


def test_an_adapter_that_loses_the_targets_it_was_given_is_refused_in_one_line():
    with pytest.raises(check_port.UserError, match=r"set_weights lost the weights it was given: "
                                                   r"get_weights returns other pi_targ, q1_targ, q2_targ"):
        check(_LostTargets)


class _ActorFirst(td3_port.Adapter):
    """td3.py's update in a loop that computes every loss first, then steps: the actor's loss
    is taken on the critics before their step (a loop that calls TorchRL's loss_module(td)
    once for both losses; its TD3 example steps the critics first)."""

    def update(self, batch, normal):
        import td3
        hp, pi = self.hp, self.ac.pi
        if self.update_fn is None:  # fresh optimizers after set_weights
            self.pi_opt = torch.optim.Adam(pi.parameters(), lr=hp.pi_lr)
            self.q_opt = torch.optim.Adam([*self.ac.q1.parameters(), *self.ac.q2.parameters()], lr=hp.q_lr)
            self.update_fn = True
        self.n_updates += 1
        o, a, r, o2, d = (torch.as_tensor(batch[k]) for k in ("obs", "act", "rew", "obs2", "done"))
        with torch.no_grad():
            a2 = core.smoothed_target_action(self.ac_targ.pi(o2), hp.target_noise, hp.noise_clip,
                                             pi.act_low, pi.act_high, pi.act_scale,
                                             normal=torch.as_tensor(normal))
            q1t, q2t = self.ac_targ.q1(o2, a2), self.ac_targ.q2(o2, a2)
        loss_q = td3.critic_loss(self.ac.q1(o, a), self.ac.q2(o, a), r, d, q1t, q2t, hp.gamma)
        delayed = self.n_updates % hp.policy_delay == 0
        if delayed:  # the actor's gradient on the critics as they are now, before their step
            pi_grads = torch.autograd.grad(-self.ac.q1(o, pi(o)).mean(), list(pi.parameters()))
        self.q_opt.zero_grad()
        loss_q.backward()
        self.q_opt.step()
        if delayed:
            for p, g in zip(pi.parameters(), pi_grads):
                p.grad = g
            self.pi_opt.step()
            with torch.no_grad():
                core.polyak_update(self.ac.parameters(), self.ac_targ.parameters(), hp.polyak)
        return {"grads": self.grads(("q1", "q2", "pi") if delayed else ("q1", "q2")),
                "target_action": a2.numpy()}


def test_a_loop_that_takes_the_actors_loss_before_the_critics_step_is_noted():
    rep, out = check(_ActorFirst)
    assert "actor_before_critic_step" in rep.noted, out


def test_the_sample_report_in_the_docs_is_what_the_checker_prints(tf_port):
    """docs/check_port.md's sample report, lines cut at 150 characters, is the checker's own
    output on the classic port: regenerate it with the command it shows when this fails."""
    from conftest import run_cli
    code, out, err = run_cli("notebooks.tf_port:SeedPort", script="check_port.py")
    doc = open(check_port.os.path.join(ROOT, "docs", "check_port.md"), encoding="utf-8").read()
    start = doc.index("```\nchecking notebooks.tf_port:SeedPort") + 4
    sample = doc[start:doc.index("```", start)].rstrip("\n").splitlines()
    assert code == 1 and sample == [line[:150].rstrip() for line in out.strip().splitlines()], out


class _Noisy(td3_port.Adapter):
    """A port whose framework warns and logs while it updates, as a library does."""

    def update(self, batch, normal):
        import logging
        import warnings
        warnings.warn("Using a target size that is different to the input size", UserWarning)
        logging.getLogger("a_library").warning("sampling from the memory")
        return super().update(batch, normal)


def test_a_ports_warnings_and_logs_stay_out_of_the_report(capfd):
    """The report is one line per piece: a library's log lines are left out, and the port's
    own warnings come after the summary, once each, with how often."""
    from conftest import run_cli
    sys.modules["_noisy_port"] = type(sys)("_noisy_port")
    sys.modules["_noisy_port"].Adapter = _Noisy
    try:
        code, out, err = run_cli("_noisy_port:Adapter", script="check_port.py")
    finally:
        del sys.modules["_noisy_port"]
    lines = out.strip().splitlines()
    summary = next(i for i, l in enumerate(lines) if "piece(s) differ" in l)
    assert code == 0 and "sampling from the memory" not in out + err + capfd.readouterr().err, out
    assert not any("target size" in l for l in lines[:summary]), out
    assert lines[summary + 1].startswith("the port warned while it ran: UserWarning: Using a "
                                         "target size that is different to the input size ("), out


def test_a_target_action_mistake_is_said_once_before_the_pieces_it_moves():
    """One cause, one line, in order: a' seen only through the step is judged first, and y is
    then compared on that a' (not reported again as a difference of its own)."""
    class YFromItsOwnA2(td3_port.Adapter):
        swaps = {"target_action": pm.noise_unclipped}

        def td_target(self, batch, normal):  # y on the port's own (unclipped) a'
            a2 = torch.as_tensor(td3_port.Adapter.target_action(self, batch["obs2"], normal))
            t = self.ac_targ
            with torch.no_grad():
                o2 = torch.as_tensor(batch["obs2"])
                return core.clipped_double_q_target(
                    torch.as_tensor(batch["rew"]), torch.as_tensor(batch["done"]),
                    t.q1(o2, a2), t.q2(o2, a2), self.hp.gamma).numpy()

    no_method = type("NoMethod", (YFromItsOwnA2,), {"target_action": None})
    rep, out = check(no_method)
    assert rep.named == ["noise_unclipped"], out
    assert rep.failed == ["trick 3, the target action the step used"], out
    pieces = [line[12:].split(":")[0] for line in out.splitlines()]
    assert pieces.index("trick 3, the target action the step used") < pieces.index(
        "trick 1, TD target"), out
    assert status(out, "trick 1, TD target") == ["PASS"], out


def test_a_differs_line_shows_the_values_that_differ():
    """The first values of both sides may agree: the line shows where they part."""
    got, want = np.zeros(256), np.zeros(256)
    got[200] = 1.5
    said = check_port.differ("y", got, want)
    assert "[1.5]" in said and "at 200" in said and "1 of 256 differ" in said, said


# ---- installable TD3s, each through its own update code (notebooks/*_port.py) ----
sys.path.insert(0, check_port.os.path.join(ROOT, "benchmarks"))
import check_libraries  # noqa: E402

LIBRARY_CHECKS = [(module, adapter, env) for module, adapter, _, envs in check_libraries.CHECKS
                  for env in envs]


def verdicts(report):
    """Each line's status and piece: what a report says, without its numbers."""
    return [(line[:11].strip(), line[12:].split(":")[0]) for line in report.splitlines()
            if line[:11].strip() in ("PASS", "DIFFERS", "NOTE", "NOT CHECKED")]


@pytest.mark.parametrize("module,adapter,env", LIBRARY_CHECKS,
                         ids=[f"{a}-{e}" for _, a, e in LIBRARY_CHECKS])
def test_each_library_says_what_its_committed_report_says(module, adapter, env):
    """results/porting/libraries holds what benchmarks/check_libraries.py wrote; the checker
    still says the same, line by line (the numbers may move with the CPU)."""
    need(module)
    path = check_port.os.path.join(check_libraries.OUT, check_libraries.report_name(adapter, env))
    committed = open(path).read()
    name, cls = adapter.split(":")
    lines = []
    rep = check_port.check(getattr(importlib.import_module(f"notebooks.{name}"), cls), env,
                           out=lines.append)
    fresh = "\n".join(lines)
    assert verdicts(fresh) == verdicts(committed), fresh
    said = check_libraries.summary(committed)
    assert said.startswith(f"{len(rep.failed)} piece(s) differ"), (said, fresh)
    for m in rep.named:
        assert variants.TABLE[m].label in said, (said, fresh)


def test_the_library_table_in_the_docs_is_the_committed_one():
    table = open(check_port.os.path.join(check_libraries.OUT, "table.md")).read()
    assert table in open(check_port.os.path.join(ROOT, "docs", "check_port.md")).read()


def skrl_declaring(base, **settings):
    """An skrl adapter class (Defaults or Paper) that declares these settings instead."""
    need("skrl")
    from notebooks import skrl_port
    cls = getattr(skrl_port, base)
    return type(f"{base}Declaring", (cls,), {"settings": dict(cls.settings, **settings)})


def test_skrl_without_smoothing_is_named_however_the_adapter_declares_it():
    rep, out = check(skrl_declaring("Defaults", target_noise=0.2))
    assert rep.named == ["no_smoothing"] and rep.failed == ["trick 3, target action"], out


def test_advice_comes_in_the_librarys_own_terms():
    """skrl's polyak is the paper's tau: a user who sets it to 0.995 is told so in skrl's words."""
    rep, out = check(skrl_declaring("Paper", tau=0.995))
    assert "polyak_as_tau" in rep.named, out
    line = next(l for l in out.splitlines() if "matches: " + variants.TABLE["polyak_as_tau"].label in l)
    assert "Set TD3_CFG's polyak to the paper's tau" in line, line


def test_advice_for_a_mistake_of_no_name_is_refused_in_one_line():
    bad = type("Bad", (td3_port.Adapter,), {"advice": {"polyak_is_tau": "set it"}})
    with pytest.raises(check_port.UserError, match="the adapter's advice names no known mistake: "
                                                   "polyak_is_tau"):
        check(bad)


def test_the_docs_table_lists_every_piece_a_report_can_print():
    import ast
    tree = ast.parse(open(check_port.__file__).read())
    pieces = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("line", "name") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            pieces.add(node.args[1].value)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "piece" for t in node.targets):
            for c in ast.walk(node.value):
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    pieces.add(c.value)
    doc = open(check_port.os.path.join(ROOT, "docs", "check_port.md")).read()
    rows = [line.split("|")[1] for line in doc.splitlines() if line.startswith("| ")]
    missing = [p for p in sorted(pieces) if not any(p in row for row in rows)]
    assert not missing, missing


def test_what_a_failing_import_printed_natively_is_shown_before_its_error(tmp_path):
    """Native output at import is held aside (TensorFlow's lines), but a load that fails shows
    it: the reason may be there, not in the exception."""
    f = tmp_path / "failing.py"
    f.write_text("import os\nos.write(2, b'native: compiled for another numpy\\n')\n"
                 "raise ImportError('multiarray failed to import')\n")
    code, out, err = run(f"{f}:Adapter")
    assert code == 2 and out == "", (out, err)
    assert err.splitlines() == ["native: compiled for another numpy",
                                f"error: cannot load {f}: ImportError: multiarray failed to import"]


def test_a_port_drawing_its_own_noise_with_a_td_target_is_not_failed():
    """Its td_target draws again: y cannot be compared, and is said so, not failed."""
    class OwnY(td3_port.Adapter):
        takes_noise, target_action = False, None

        def td_target(self, batch, normal):
            with torch.no_grad():
                t, o2 = self.ac_targ, torch.as_tensor(batch["obs2"])
                pi = self.ac.pi
                a2 = core.smoothed_target_action(t.pi(o2), 0.2, 0.5, pi.act_low, pi.act_high,
                                                 pi.act_scale)  # its own draw
                return core.clipped_double_q_target(
                    torch.as_tensor(batch["rew"]), torch.as_tensor(batch["done"]),
                    t.q1(o2, a2), t.q2(o2, a2), self.hp.gamma).numpy()
    rep, out = check(OwnY)
    assert rep.failed == [], out
    assert status(out, "trick 1, TD target") == ["NOT CHECKED"], out


def test_y_built_on_the_ports_correct_target_action_is_not_blamed_for_its_steps_a2():
    """The port's target_action is right and its y uses it; its update's a' is not: one line,
    the step's a', and y passes."""
    class SplitY(Split):
        def td_target(self, batch, normal):
            a2 = torch.as_tensor(self.target_action(batch["obs2"], normal))
            with torch.no_grad():
                t, o2 = self.ac_targ, torch.as_tensor(batch["obs2"])
                return core.clipped_double_q_target(
                    torch.as_tensor(batch["rew"]), torch.as_tensor(batch["done"]),
                    t.q1(o2, a2), t.q2(o2, a2), self.hp.gamma).numpy()
    rep, out = check(SplitY)
    assert rep.failed == ["trick 3, the target action the step used"], out
    assert status(out, "trick 1, TD target") == ["PASS"], out


def test_trick_3_declared_off_is_compared_on_the_steps_a2_when_the_port_draws_its_own():
    """skrl with noise in its config, declared without: the a' its step used is not pi'(s')."""
    rep, out = check(skrl_declaring("Paper", target_noise=0.0))
    assert "trick 3, the target action the step used" in rep.failed, out
    rep, out = check(skrl_declaring("Defaults"))  # no noise, as declared: a' = pi'(s') checked
    assert status(out, "trick 3, target action")[-1] == "PASS", out


def test_a_differs_line_in_a_report_shows_the_rows_that_differ():
    """A y that parts from td3.py's on four rows only: its line shows those rows, not the first
    four, which agree."""
    class FourRowsOff(td3_port.Adapter):
        def td_target(self, batch, normal):
            a2 = torch.as_tensor(self.target_action(batch["obs2"], normal))
            with torch.no_grad():
                t, o2 = self.ac_targ, torch.as_tensor(batch["obs2"])
                y = core.clipped_double_q_target(
                    torch.as_tensor(batch["rew"]), torch.as_tensor(batch["done"]),
                    t.q1(o2, a2), t.q2(o2, a2), self.hp.gamma).numpy()
            y[200:204] += 1.0
            return y
    rep, out = check(FourRowsOff)
    line = next(l for l in out.splitlines() if l[12:].startswith("trick 1, TD target:"))
    assert line.startswith("DIFFERS") and "at 200, 201, 202, 203; 4 of 256 differ" in line, line
