"""Replay a trained agent: print its returns, show it in a window, or write a GIF. No training.

    python watch.py results/ablations/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s1  # its actor.pt
    python watch.py data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0 --gif walker.gif
    python watch.py RUN_DIR --last                  # the last checkpoint, not the best epoch
    python watch.py RUN_DIR --save_actor actor.pt   # a small actor-only file to share

What it can load, in a run directory:
``actor.pt`` (actor weights only, what results/ ships), else ``best.pt`` (the judged
actor-critic: the solved one, else the best test epoch's), else ``ckpt.pt``; or any of these files given directly. Every file is
loaded with ``torch.load(..., weights_only=True)``: tensors and plain values, no code.
Episodes are deterministic (no exploration noise) and seeded, so a replay is repeatable.
"""
import os

import numpy as np

import core
from run import judging
from run.directory import load_checkpoint, read_config, save_checkpoint
from run.envs import rebuild_env
from run.errors import ArgumentParser, UserError, run_main


def find_weights(path, last=False):
    """The weights file to replay and the run directory it belongs to."""
    if os.path.isfile(path):
        return path, os.path.dirname(path) or "."
    if not os.path.isdir(path):
        raise UserError(f"{path} is neither a run directory nor a weights file")
    names = ["ckpt.pt"] if last else ["actor.pt", "best.pt", "ckpt.pt"]
    for name in names:
        if os.path.exists(os.path.join(path, name)):
            return os.path.join(path, name), path
    raise UserError(f"{path} has no checkpoint ({' or '.join(names)}) to watch")


def load_actor(path, last=False):
    """An MLPActorCritic whose actor holds the saved weights, its config and the file used."""
    weights, run_dir = find_weights(path, last)
    config = read_config(run_dir)
    try:
        saved = load_checkpoint(weights)
    except ValueError as e:
        raise UserError(str(e)) from None
    if not isinstance(saved, dict) or not ("pi" in saved or "ac" in saved):
        raise UserError(f"{weights} holds no actor weights")
    if saved.get("env_id", config["env_id"]) != config["env_id"]:
        raise UserError(f"{weights} is for {saved['env_id']}, its run for {config['env_id']}")
    env = rebuild_env(config, run_dir)()
    ac = core.MLPActorCritic(env.observation_space, env.action_space, **config["ac_kwargs"])
    env.close()
    pi = saved["pi"] if "pi" in saved else {k[3:]: v for k, v in saved["ac"].items()
                                            if k.startswith("pi.")}
    # Files written before core.py named the inner networks ``net`` called it ``pi``.
    pi = {k.replace("pi.", "net.", 1) if k.startswith("pi.") else k: v for k, v in pi.items()}
    try:
        ac.pi.load_state_dict(pi)
    except RuntimeError:
        raise UserError(f"{weights} holds networks of another shape than "
                        f"{config['ac_kwargs']}") from None
    return ac, config, weights, saved


def watch(path, episodes=5, gif=None, which="best", seed=10_000):
    """Run deterministic episodes of a saved agent; print each return; render or write a GIF."""
    ac, config, weights, saved = load_actor(path, last=which == "last")
    render_mode = "rgb_array" if gif else ("human" if os.environ.get("DISPLAY") else None)
    env = rebuild_env(config, os.path.dirname(weights) or ".", render_mode=render_mode)()
    frames, rets = [], []

    def grab(env, ep_len):  # the GIF's frames: every second step of the first episode
        if ep_len % 2 == 0:
            frames.append(env.render())

    for ep in range(episodes):  # the episodes the judging plays (run/judging.py), from these seeds
        ep_ret, ep_len, _, _ = judging.play(env, ac.act, seed + ep, config["max_ep_len"],
                                            after_step=grab if gif and ep == 0 else None)
        rets.append(ep_ret)
        print(f"episode {ep + 1}: return {ep_ret:.1f}, length {ep_len}", flush=True)
    print(f"average return over {episodes} episodes: {np.mean(rets):.1f} "
          f"(std {np.std(rets):.1f}) from {weights} (epoch {saved.get('epoch')})")
    if gif:
        write_gif(frames, gif)
        print(f"wrote {gif} ({len(frames)} frames of episode 1)")
    env.close()
    return rets


def save_actor(path, out, last=False):
    """Write the actor's weights alone (a few hundred KB) with what is needed to rebuild it."""
    ac, config, weights, saved = load_actor(path, last)
    save_checkpoint(dict(pi=ac.pi.state_dict(), env_id=config["env_id"],
                         ac_kwargs=config["ac_kwargs"], epoch=saved.get("epoch"),
                         test_return=saved.get("test_return")), out)
    print(f"wrote {out} ({os.path.getsize(out) / 1e3:.0f} KB): the actor of {weights} "
          f"(epoch {saved.get('epoch')})")


def write_gif(frames, path, scale=0.5, fps=25):
    from PIL import Image  # only for --gif: watching in a window or for returns needs no pillow
    imgs = [Image.fromarray(f) for f in frames]
    size = (int(imgs[0].width * scale), int(imgs[0].height * scale))
    imgs = [im.resize(size).convert("P", palette=Image.ADAPTIVE, colors=64) for im in imgs]
    imgs[0].save(path, save_all=True, append_images=imgs[1:], duration=int(1000 / fps), loop=0)


def main(argv=None):
    p = ArgumentParser(description="Replay a trained TD3 agent.")
    p.add_argument("path", help="a run directory, or an actor.pt / best.pt / ckpt.pt in one")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--gif", metavar="FILE", help="write episode 1 as a GIF")
    p.add_argument("--last", action="store_true", help="ckpt.pt (the last epoch), not the best")
    p.add_argument("--save_actor", metavar="FILE", help="write an actor-only weights file")
    args = p.parse_args(argv)
    if args.episodes < 1:
        raise UserError(f"--episodes must be a positive integer, got {args.episodes}")
    if args.save_actor:
        save_actor(args.path, args.save_actor, args.last)
        return
    watch(args.path, episodes=args.episodes, gif=args.gif, which="last" if args.last else "best")


if __name__ == "__main__":
    run_main(main)
