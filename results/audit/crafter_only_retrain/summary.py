import json, statistics
from pathlib import Path
R = Path("results/runs/ca3d42bc0a83")
keys = ["make_stone_sword", "make_stone_pickaxe", "collect_stone", "place_furnace"]
for s in (1, 2):
    new = json.loads(Path(f"results/audit/crafter_only_retrain/runs/ca3d42bc0a83/seed-{s}/final_metrics.json").read_text())
    old = json.loads((R / f"seed-{s}/final_metrics.json").read_text())
    print(s, "retrained", round(new["score"], 2), "committed", round(old["score"], 2),
          {k: (round(new["success_rates"][k], 2), round(old["success_rates"][k], 2)) for k in keys})
conf = [json.loads((R / f"seed-{s}/final_metrics.json").read_text())["score"] for s in range(5, 20)]
print("confirm 5-19: min %.2f max %.2f mean %.2f sd %.2f" % (min(conf), max(conf), statistics.mean(conf), statistics.stdev(conf)))
