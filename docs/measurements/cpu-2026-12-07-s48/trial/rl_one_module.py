"""A2C on a pure-Python CartPole (8 envs), no DataLoader: each iteration collects a rollout
by stepping the envs in Python (policy acts under no_grad), then does one actor-critic update."""
import argparse, math, random, sys, time
import torch, torch.nn as nn
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--iters", type=int, default=120)
args = p.parse_args()
torch.manual_seed(0)


class CartPole:
    g, mc, mp, l, F, dt = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def __init__(self, seed):
        self.rng = random.Random(seed); self.reset()

    def reset(self):
        self.s = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]; return list(self.s)

    def step(self, a):
        x, xd, th, thd = self.s
        f = self.F if a == 1 else -self.F
        # a few physics sub-steps (semi-implicit Euler), in pure Python
        for _ in range(4):
            ct, st = math.cos(th), math.sin(th)
            tmp = (f + self.mp * self.l * thd * thd * st) / (self.mc + self.mp)
            tha = (self.g * st - ct * tmp) / (self.l * (4.0 / 3.0 - self.mp * ct * ct / (self.mc + self.mp)))
            xa = tmp - self.mp * self.l * tha * ct / (self.mc + self.mp)
            dt = self.dt / 4
            xd += dt * xa; x += dt * xd; thd += dt * tha; th += dt * thd
        self.s = [x, xd, th, thd]
        done = abs(x) > 2.4 or abs(th) > 0.21
        # observation features: a little hand-made feature engineering, also Python
        obs = self.s + [math.sin(th), math.cos(th), x * x, thd * xd] + [self.rng.gauss(0, 0.01) for _ in range(24)]
        if done:
            self.reset()
        return obs, 1.0, done


ENVS, HORIZON, OBS = 8, 128, 32
envs = [CartPole(i) for i in range(ENVS)]
class Policy(nn.Module):  # session 48: rl.py with its body and heads in one module
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh())
        self.pi, self.vf = nn.Linear(256, 2), nn.Linear(256, 1)

    def forward(self, o):
        h = self.net(o)
        return self.pi(h), self.vf(h).squeeze(1)


policy = Policy()
opt = torch.optim.Adam(policy.parameters(), 3e-4)
obs = [e.step(0)[0] for e in envs]
T = Truth(enabled=args.truth)
ret_hist = []
for it in range(args.iters):
    T.begin()
    # ---- rollout: the batch is made here, by the loop itself
    O, A, R, Dn = [], [], [], []
    for t in range(HORIZON):
        o = torch.tensor(obs)
        with torch.no_grad():
            probs = torch.softmax(policy(o)[0], -1)
        T.mark("wait", sub="rollout_policy_forward")
        acts = torch.multinomial(probs, 1).squeeze(1).tolist()
        nxt, rew, dn = [], [], []
        for e, a in zip(envs, acts):
            ob, r, d = e.step(a); nxt.append(ob); rew.append(r); dn.append(d)
        O.append(obs); A.append(acts); R.append(rew); Dn.append(dn)
        obs = nxt
        T.mark("wait", sub="rollout_env_python")
    # ---- returns (discounted, in Python) and batch tensors
    G = [0.0] * ENVS; rets = []
    for r, d in zip(reversed(R), reversed(Dn)):
        G = [ri + 0.99 * g * (0.0 if di else 1.0) for ri, g, di in zip(r, G, d)]
        rets.append(G)
    rets.reverse()
    ob_t = torch.tensor(O).reshape(-1, OBS); a_t = torch.tensor(A).reshape(-1); ret_t = torch.tensor(rets).reshape(-1)
    T.mark("pre")
    # ---- update
    logits, v = policy(ob_t)
    logp = torch.log_softmax(logits, -1).gather(1, a_t[:, None]).squeeze(1)
    adv = (ret_t - v).detach()
    loss = -(logp * adv).mean() + 0.5 * (ret_t - v).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    T.mark("model")
    ret_hist.append(ret_t.mean().item())
    T.mark("sync")
    if it % 20 == 0:
        print(f"iter {it} loss {loss.item():.3f} mean_return {ret_hist[-1]:.2f}", flush=True)
    T.mark("post")
    T.end_step()
print(f"done: {args.iters} A2C iterations, last mean_return {ret_hist[-1]:.2f}")
T.report(windows=1)
