import json, sys, re
J = sys.argv[1]; O = f'out/{J}'
print('==', J); print(open(f'{O}/rcs').read().strip())
print([l for l in open(f'{O}/truth.out') if l.startswith('TRUTH')][0].strip())
for f in ('run.err', 'run2.err'):
    print('--', f); print(''.join(l for l in open(f'{O}/{f}') if not ('NumPy' in l or '_conversion_method' in l)).rstrip())
pid = open(f'{O}/children.txt').read().split()[3]
d = json.load(open(f'{O}/once.json'))
print('-- once (job pid', pid, ')')
for it in d['jobs']['items']:
    v = it['verdict']; e = v.get('evidence', {})
    mine = any(str(r['pid']) == pid for r in it['ranks'])
    if not mine and it['live'] is False: continue
    sh = {k: e.get(f'host_{k}_share') for k in ('wait','loop_pre','copy','model','sync','loop_post')}
    print(it['job_key'], 'mine' if mine else 'OTHER', 'live', it['live'], v['kind'], '|', v['headline'])
    print('   shares', {k: (round(100*x,1) if x is not None else None) for k, x in sh.items()}, 'between', e.get('between_share'), 'steps', e.get('first_step'), e.get('last_step'))
    for a in v.get('advice', []): print('   advice:', a)
a = json.load(open(f'{O}/attach.json'))
v = a['verdict']; print('-- attach', v['kind'], '|', v['headline'])
for x in v.get('advice', []): print('   advice:', x)
r = a['ranks'][0]; print('   ', {k: r[k] for k in ('data_wait_share','main_loading_share','compute_share','other_share','gpu_sync_share','samples','sampler_share','loop_iterable_share')})
