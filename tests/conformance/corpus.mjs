// Deterministic test corpus for the tokenizer conformance suite, and the
// mixed benchmark text for bench/tokenize.sh.
//
//   node corpus.mjs                  JSON lines {"cat": ..., "text": ...}, one per string
//   node corpus.mjs --stats          how many strings of each category, and coverage checks
//   node corpus.mjs --bench-mb 10    >= 10 MB (UTF-8) of mixed text on stdout, no special-token text
//   --seed N                         another corpus (default 20250101)
//
// Everything comes from one seeded PRNG (sfc32), never Math.random, so the
// same seed gives byte-identical output on every machine. Strings are always
// well-formed Unicode (no lone surrogates): they travel as JSON lines to the
// C side.

import path from "node:path";
import { fileURLToPath } from "node:url";

export const DEFAULT_SEED = 20250101;

// ---------------------------------------------------------------- PRNG

export function makeRng(seed) {
    // sfc32, seeded through splitmix32 so small seeds spread well.
    let s = seed >>> 0;
    const split = () => {
        s = (s + 0x9e3779b9) >>> 0;
        let z = s;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
        return (z ^ (z >>> 16)) >>> 0;
    };
    let a = split(), b = split(), c = split(), d = split();
    const u32 = () => {
        const t = (((a + b) >>> 0) + d) >>> 0;
        d = (d + 1) >>> 0;
        a = b ^ (b >>> 9);
        b = (c + (c << 3)) >>> 0;
        c = ((c << 21) | (c >>> 11)) >>> 0;
        c = (c + t) >>> 0;
        return t;
    };
    for (let i = 0; i < 12; i++) u32();
    const rng = {
        u32,
        float: () => u32() / 4294967296,
        int: (n) => Math.floor((u32() / 4294967296) * n), // 0 .. n-1
        range: (lo, hi) => lo + Math.floor((u32() / 4294967296) * (hi - lo + 1)), // lo .. hi
        chance: (p) => u32() / 4294967296 < p,
        pick: (arr) => arr[Math.floor((u32() / 4294967296) * arr.length)],
        // Zipf-like: early entries much more often, as words in real text.
        zipf: (arr) => arr[Math.floor(arr.length * Math.pow(u32() / 4294967296, 2.2))],
        weighted: (pairs) => {
            let total = 0;
            for (const [w] of pairs) total += w;
            let r = (u32() / 4294967296) * total;
            for (const [w, v] of pairs) {
                if ((r -= w) < 0) return v;
            }
            return pairs[pairs.length - 1][1];
        },
    };
    return rng;
}

// ---------------------------------------------------------------- material

const EN_WORDS = `the of and to a in is it you that he was for on are with as I his they be at one have this
from or had by hot word but what some we can out other were all there when up use your how said an each she
which do their time if will way about many then them write would like so these her long make thing see him two
has look more day could go come did number sound no most people my over know water than call first who may down
side been now find any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help low line differ turn
cause much mean before move right boy old too same tell does set three want air well also play small end put home
read hand port large spell add even land here must big high such follow act why ask men change went light kind off
need house picture try us again animal point mother world near build self earth father head stand own page should
country found answer school grow study still learn plant cover food sun four between state keep eye never last let
thought city tree cross farm hard start might story saw far sea draw left late run while press close night real life
few north open seem together next white children begin got walk example ease paper group always music those both mark
often letter until mile river car feet care second book carry took science eat room friend began idea fish mountain
stop once base hear horse cut sure watch color face wood main enough plain girl usual young ready above ever red list
though feel talk bird soon body dog family direct pose leave song measure door product black short numeral class wind
question happen complete ship area half rock order fire south problem piece told knew pass since top whole king space
heard best hour better true during hundred five remember step early hold west ground interest reach fast verb sing
listen six table travel less morning ten simple several vowel toward war lay against pattern slow center love person
money serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall lead cry dark
machine note wait plan figure star box noun field rest correct able pound done beauty drive stood contain front teach
week final gave green oh quick develop ocean warm free minute strong special mind behind clear tail produce fact street
inch multiply nothing course stay wheel full force blue object decide surface deep moon island foot system busy test
record boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate miss brought heat
snow tire bring yes distant fill east paint language among grand ball yet wave drop heart present heavy dance engine
position arm wide sail material size vary settle speak weight general ice matter circle pair include divide syllable
felt perhaps pick sudden count square reason length represent art subject region energy hunt probable bed brother egg
ride cell believe fraction forest sit race window store summer train sleep prove lone leg exercise wall catch mount wish
sky board joy winter sat written wild instrument kept glass grass cow job edge sign visit past soft fun bright gas
weather month million bear finish happy hope flower clothe strange gone jump baby eight village meet root buy raise
solve metal whether push seven paragraph third shall held hair describe cook floor either result burn hill safe cat
century consider type law bit coast copy phrase silent tall sand soil roll temperature finger industry value fight lie
beat excite natural view sense ear else quite broke case middle kill son lake moment scale loud spring observe child
straight consonant nation dictionary milk speed method organ pay age section dress cloud surprise quiet stone tiny climb
cool design poor lot experiment bottom key iron single stick flat twenty skin smile crease hole trade melody trip
office receive row mouth exact symbol die least trouble shout except wrote seed tone join suggest clean break lady yard
rise bad blow oil blood touch grew cent mix team wire cost lost brown wear garden equal sent choose fell fit flow fair
bank collect save control decimal gentle woman captain practice separate difficult doctor please protect noon whose
locate ring character insect caught period indicate radio spoke atom human history effect electric expect crop modern
element hit student corner party supply bone rail imagine provide agree thus capital chair danger fruit rich thick
soldier process operate guess necessary sharp wing create neighbor wash bat rather crowd corn compare poem string bell
depend meat rub tube famous dollar stream fear sight thin triangle planet hurry chief colony clock mine tie enter major
fresh search send yellow gun allow print dead spot desert suit current lift rose continue block chart hat sell success
company subtract event particular deal swim term opposite wife shoe shoulder spread arrange camp invent cotton born
determine quart nine truck noise level chance gather shop stretch throw shine property column molecule select wrong
gray repeat require broad prepare salt nose plural anger claim continent oxygen sugar death pretty skill women season
solution magnet silver thank branch match suffix especially fig afraid huge sister steel discuss forward similar guide
experience score apple bought led pitch coat mass card band rope slip win dream evening condition feed tool total basic
smell valley nor double seat arrive master track parent shore division sheet substance favor connect post spend chord
fat glad original share station dad bread charge proper bar offer segment slave duck instant market degree populate
chick dear enemy reply drink occur support speech nature range steam motion path liquid log meant quotient teeth shell
neck`.split(/\s+/).filter(Boolean);

const EN_SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse, I thought I would sail about a little.",
    "Tokenizers split text into pieces; the model only ever sees integers.",
    "She said, \"I'll be there at 5:30 p.m., don't wait for me!\"",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong's first words were broadcast worldwide.",
    "Rock 'n' roll isn't dead — it's just resting.",
    "Dr. Smith (Ph.D.) reviewed the U.S. report on pp. 12–15, e.g. Table 3.",
    "The café's crème brûlée was naïve, but the jalapeño soufflé? Exquisite.",
    "What's the difference between a list and a tuple? Mutability, mostly.",
    "Over 9,000 people attended; ~42% stayed until 11 PM.",
    "  Leading spaces, trailing spaces, and    internal runs of them.   ",
    "ALL CAPS SENTENCES ARE SHOUTING, AREN'T THEY?",
    "mIxEd CaSe tExT iS hArD tO rEaD.",
    "Email me at first.last+tag@example.co.uk or visit https://example.org/path?q=1&r=two#frag.",
    "Hello,world!No spaces after punctuation...really?!",
    "A sentence with a hyphenated-word, an em—dash, an en–dash, and ellipsis…",
    "\"Quoted,\" 'single-quoted,' «guillemets», „German quotes“, and ‘curly’ ones.",
    "The temperature was −40° (which is −40 °F, too).",
    "I've, you'd, he'll, we're, they've, it's, isn't, can't, won't, shan't.",
];

const ZH = ["我们今天去公园散步，天气非常好。", "人工智能正在改变世界。", "这个模型的分词器使用字节级BPE算法。",
    "北京是中华人民共和国的首都。", "他说：“你好！欢迎来到上海。”", "请把文件发送到我的邮箱，谢谢。",
    "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "数据显示，2024年第三季度的增长率为5.2%。",
    "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？", "計算機科學與技術（繁體中文）", "我爱吃饺子和包子。",
    "这是一个测试句子，用于检查中文分词是否正确。", "龍飛鳳舞，鬱鬱蔥蔥。", "𠀀𠀁𠀂 是扩展B区的汉字。"];
const ZH_CHARS = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知己开现工本力者内表理机作新实口利性把外正物回明意政体结各";
const JA = ["今日はいい天気ですね。", "東京タワーに行きたいです！", "私の名前は田中です。よろしくお願いします。",
    "カタカナとひらがなと漢字が混ざっています。", "ｶﾀｶﾅ（半角）も試します。", "吾輩は猫である。名前はまだ無い。",
    "コンピューターのプログラミングは楽しい。", "「こんにちは」と彼女は言った。", "ラーメン、寿司、天ぷら、どれが好き？",
    "が\u3099ぎ\u3099（結合濁点）とパ\u309A"];
const JA_KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンガギグゲゴザジズゼゾダヂヅデドバビブベボパピプペポーッャュョ";
const KO = ["안녕하세요, 만나서 반갑습니다.", "한국어 토크나이저를 시험하고 있어요.", "서울은 대한민국의 수도입니다.",
    "오늘 저녁에 뭐 먹을까요? 김치찌개 어때요?", "훈민정음은 1443년에 창제되었다.", "ㄱㄴㄷㄹ ㅏㅑㅓㅕ (호환 자모)"];
const AR = ["مرحبا بالعالم", "اللغة العربية جميلة جدا.", "السَّلَامُ عَلَيْكُمْ وَرَحْمَةُ اللهِ", "الرقم ١٢٣٤٥ بالأرقام العربية الهندية.",
    "كتب الطالب الدرس في الدفتر، ثم ذهب إلى المدرسة.", "هل تتحدث الإنجليزية؟"];
const HI = ["नमस्ते दुनिया", "हिन्दी भाषा देवनागरी लिपि में लिखी जाती है।", "क्षत्रिय, ज्ञान, श्री, द्विज", "मैं आज बाज़ार जाऊँगा।",
    "भारत की राजधानी नई दिल्ली है।", "संख्याएँ: ०१२३४५६७८९", "क़िला ख़ूबसूरत है।"];
const TH = ["สวัสดีครับ ยินดีต้อนรับ", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "น้ำแข็งใส่แก้วเย็นๆ", "๑๒๓๔๕ ตัวเลขไทย"];
const RU = ["Привет, мир!", "Съешь же ещё этих мягких французских булок, да выпей чаю.", "Москва — столица России.",
    "ЁЛКА и ёлка; Й и й.", "Он сказал: «Я приду в 10:00».", "Українська мова: ґанок, їжак, є."];
const EL = ["Γειά σου Κόσμε!", "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.", "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "ΑΒΓΔΕ αβγδε ς σ Σ", "ἐν ἀρχῇ ἦν ὁ λόγος (πολυτονικό)"];
const OTHER = ["שלום עולם", "Xin chào thế giới, tiếng Việt có nhiều dấu.", "Größe, Straße, Fußball, ẞ",
    "İstanbul'da ılık bir gün; I ı İ i", "Ça va? Où est l'hôtel? À bientôt!", "Zażółć gęślą jaźń.",
    "Ἀθῆναι", "Þetta er íslenska: ð, þ, æ.", "Հայերեն", "ქართული ენა", "አማርኛ", "ᏣᎳᎩ", "ᚠᚢᚦᚨᚱᚲ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒂𝒍𝒑𝒉𝒂", "ﬁﬂ ligatures, Ａｂｃ fullwidth, ① circled, ㎏ squared"];

const LANG_WORDS = {
    ru: "и в не на я быть он с что а по это она этот к но они мы как из у который то за свой что весь год от так о для ты же все тот мочь вы человек такой его сказать только или ещё бы себя один как уже до время если сам когда другой вот говорить наш мой знать стать при чтобы дело жизнь кто первый очень два день её новый рука даже во со раз где там под можно ну какой после их работа без самый потом надо хотеть ли слово идти большой должен место иметь ничто".split(" "),
    el: "και το η της ο να σε με για από που τα των στο στην είναι θα δεν την τον στη ως αλλά κατά μετά οι ότι πως αυτό έχει ένα μια λόγος χρόνος άνθρωπος ημέρα ζωή κόσμος πόλη νερό ήλιος θάλασσα".split(" "),
    ar: "في من على إلى أن هذا التي الذي مع كان عن هذه ما لا كل بين قد ذلك بعد حتى عند كما أو لم هو هي يوم الناس العالم الكتاب المدينة الماء الشمس البحر الحياة".split(" "),
    hi: "के है में की और से को का एक यह पर हैं कि भी था लिए ने नहीं तो हो गया कर रहा जो इस वह साथ अपने किया होता समय लोग दुनिया पानी सूरज समुद्र जीवन शहर किताब".split(" "),
    ko: "나 너 우리 그 이 저 것 수 사람 때 일 말 집 물 나라 하늘 바다 사랑 시간 학교 친구 음식 생각 문제 세계 한국 오늘 내일 어제 정말 아주 많이 조금 그리고 하지만 그래서 합니다 했습니다 입니다 있어요 없어요".split(" "),
    th: "ที่ การ ของ และ ใน เป็น มี ได้ ไม่ ให้ ว่า จะ ไป มา คน นี้ กับ แล้ว ก็ อยู่ ความ เรา เขา ประเทศ น้ำ ฟ้า ทะเล บ้าน เมือง รัก".split(" "),
};

const EMOJI_SINGLE = ["😀", "😂", "🥲", "😍", "🤔", "🙃", "🔥", "✨", "🎉", "🚀", "💯", "❤", "❤️", "☺️", "☺︎", "✌️", "⭐", "🌍", "🍕", "🐍",
    "🦀", "🧠", "💻", "📈", "✅", "❌", "⚠️", "🙏", "👀", "🫠", "🪿", "🀄", "🃏", "©️", "®", "™️", "‼️", "🆗", "🈯"];
const EMOJI_ZWJ = ["👨‍👩‍👧‍👦", "👩‍💻", "🧑‍🚀", "👨🏽‍🔬", "🏳️‍🌈", "🏳️‍⚧️", "🧑🏿‍🤝‍🧑🏻", "👁️‍🗨️", "❤️‍🔥", "🐕‍🦺", "🧔‍♀️", "👩‍❤️‍💋‍👨", "🐻‍❄️", "😶‍🌫️"];
const SKIN = ["\u{1F3FB}", "\u{1F3FC}", "\u{1F3FD}", "\u{1F3FE}", "\u{1F3FF}"];
const SKIN_BASES = ["👍", "👋", "🤝", "✋", "👶", "🧑", "💪", "🙌", "🤙", "👏"];
const FLAGS = ["🇯🇵", "🇺🇸", "🇩🇪", "🇫🇷", "🇨🇳", "🇰🇷", "🇧🇷", "🇮🇳", "🇺🇦", "🇪🇺", "🇺🇳", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🏴󠁧󠁢󠁷󠁬󠁳󠁿", "🏁", "🇦"];
const KEYCAPS = ["0️⃣", "1️⃣", "2️⃣", "9️⃣", "#️⃣", "*️⃣", "1\u20E3", "🔟"];

// Combining marks and decomposed forms, where NFC changes the text.
const COMBINING = [
    "e\u0301", "E\u0301", "A\u030A", "a\u0308", "o\u0308", "u\u0308", "n\u0303", "c\u0327", "i\u0302",
    "Cafe\u0301", "re\u0301sume\u0301", "nai\u0308ve", "A\u030Angstro\u0308m", "\u212B", "\u2126", "\u212A",
    "a\u0323\u0302", "a\u0302\u0323", "q\u0307\u0323", "q\u0323\u0307", "e\u0301\u0301\u0301", "x\u0301",
    "\u1100\u1161", "\u1100\u1161\u11A8", "\u1112\u1161\u11AB\u1100\u1173\u11AF", "\uAC00\u11A8", "\u1100\u1161\u11A8\u1161",
    "\u0958", "\u0915\u093C", "\u0929", "\u0928\u093C", "\u0F73", "\u0344", "\u0340", "\u1E9B\u0323",
    "Vie\u0323\u0302t Nam", "Tie\u0302\u0301ng Vie\u0323\u0302t", "\u0627\u0653", "\u05E9\u05C1", "\uFB2A",
    "\u3099", "\u304B\u3099", "\u30CF\u309A", "\u0301start", "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D\u034F\u0334\u0319\u0324\u031E\u0349\u035A\u032F\u031E\u0320\u034D",
    "\u00E9", "\u00C5", "\u01D7", "U\u0308\u0301", "\u0041\u030C\u0304", "\u1E0B\u0323", "d\u0323\u0307",
    "\u2000", "\u2001", "\u0CCB", "\u0CC6\u0CC2\u0CD5", "\u0BCA", "\u0BC6\u0BBE", "\u1B06", "\u1B05\u1B35",
    "\uFB01", "\uFF21", "\u2460", "\u00BD", "\u2163", "\u00B2", "\u1D400",
];

const CODE = {
    c: [`#include <stdio.h>\n\nint main(int argc, char **argv) {\n    printf("Hello, %s!\\n", argc > 1 ? argv[1] : "world");\n    return 0;\n}\n`,
        `static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }`,
        `for (size_t i = 0; i < n; i++) {\n\tif (buf[i] == '\\0') break;\n\tsum += buf[i] * 31u;\n}`,
        `typedef struct { float *wq; // (layer, dim, n_heads * head_dim)\n    int n_layers; } weights_t;`,
        `#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#ifdef __AVX2__\n#  include <immintrin.h>\n#endif`],
    python: [`def fib(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n`,
        `class Foo(Base):\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n        self._cache: dict[str, int] = {}\n`,
        `import numpy as np\nx = np.arange(10_000).reshape(100, -1) @ np.eye(100)\nprint(f"{x.sum():,.2f}")`,
        `if __name__ == "__main__":\n    main()\n`, `lambda x: [y**2 for y in x if y % 2 == 0]`, `with open("f.txt", encoding="utf-8") as fh:\n\tdata = fh.read().splitlines()`],
    js: [`const add = (a, b) => a + b;\nexport default async function main() {\n  const res = await fetch(\`/api/\${id}\`);\n  return res.json();\n}`,
        `document.querySelectorAll('div.item > a[href^="http"]').forEach(el => el.classList.add("ext"));`,
        `let x = a ?? b; x ||= c; y &&= d; const re = /^\\s*(\\d+)\\s*$/gu;`, `console.log(JSON.stringify({a: 1, b: [true, null]}, null, 2));`],
    rust: [`fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!("{:?}", v);\n}`,
        `impl<'a, T: Clone + Send> Iterator for Iter<'a, T> {\n    type Item = &'a T;\n    fn next(&mut self) -> Option<Self::Item> { self.inner.next() }\n}`,
        `#[derive(Debug, Clone, PartialEq)]\npub enum Token { Word(String), Num(i64), Eof }`, `match x { Some(ref y) if *y > 0 => y, _ => &0 }`],
    html: [`<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Test &amp; page</title></head>\n<body>\n  <p class="x">Hello&nbsp;world &lt;3</p>\n</body>\n</html>`,
        `<div id="app" data-value='{"a":1}'><!-- comment --><br/><img src="a.png" alt=""></div>`, `<script>if (a < b && c > d) { alert("hi"); }</script>`],
    json: [`{"name": "splash", "version": "0.1.0", "tags": ["c", "llm"], "nested": {"x": 1.5e-3, "y": null, "z": true}}`,
        `[\n  {\n    "id": 1,\n    "text": "line\\nbreak \\"quoted\\" \\u00e9"\n  },\n  {\n    "id": 2\n  }\n]`, `{"emoji":"😀","cjk":"中文","esc":"\\t\\\\"}`],
    shell: [`#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l "$f" | awk '{print $1}'\ndone 2>/dev/null | sort -n | tail -1`,
        `export PATH="$HOME/.local/bin:$PATH" && cd /tmp && ls -la | grep -E '^d' || echo "none"`, `cat <<'EOF' > out.txt\n$NOT_EXPANDED \${x:-default}\nEOF`],
    other: [`SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.user_id = u.id WHERE o.total > 100 GROUP BY u.id HAVING n > 2;`,
        `func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {\n\tif err := s.do(r); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}`,
        `# Title\n\n- item **bold** and _italic_\n- [link](http://x.y)\n\n\`\`\`python\nprint(1)\n\`\`\`\n\n| a | b |\n|---|---|\n| 1 | 2 |`,
        `\\begin{equation}\n  E = mc^2, \\quad \\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}\n\\end{equation}`],
};
const IDENTS = ["i", "j", "n", "buf", "len", "ctx", "self", "result", "value", "tmp", "x_1", "fooBar", "FooBar", "FOO_BAR",
    "_private", "__dunder__", "camelCaseName", "snake_case_name", "kebab-case", "n_tokens", "head_dim", "kv_cache", "myVar2"];

const WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", "\r\n\r\n", "\u00A0", "\u3000", "\u2028", "\u2029",
    "\u0085", "\uFEFF", "\u000B", "\u000C", "\u2009", "\u200A", "\u1680", "\u202F", "\u205F", "\u2002", "\u200B", "\u180E", "\u00AD"];

const ADDED_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
    "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>"];
const SPECIAL_LOOKALIKES = ["<|im_", "<|im_start|", "|im_start|>", "<|im_start", "<|IM_START|>", "< |im_start|>", "<|im start|>",
    "<|endoftext", "endoftext|>", "<|endoftext|", "<thinking>", "<think", "think>", "</ think>", "<THINK>", "<tool_call", "</tool_",
    "<|>", "<||>", "<|", "|>", "<<|im_end|>>", "<|<|im_end|>|>", "<|im_end|><|im_end|>", "<|im_start|><|im_end|>", "＜|im_start|＞",
    "<\u200B|im_start|>", "<|im_start\u0301|>", "<|im_start|>\u0301"];

// ---------------------------------------------------------------- generators

function words(rng, list, n, sep = " ") {
    const out = [];
    for (let i = 0; i < n; i++) out.push(rng.zipf(list));
    return out.join(sep);
}

const SYLLABLES = ["ka", "lo", "tri", "an", "el", "ver", "qu", "str", "ix", "on", "ph", "ae", "zy", "mor", "ght", "ly", "ing", "tion", "pre", "un"];
function pseudoWord(rng) {
    let w = "";
    const n = rng.range(1, 4);
    for (let i = 0; i < n; i++) w += rng.pick(SYLLABLES);
    return w;
}

function englishSentence(rng) {
    const n = rng.range(4, 22);
    const ws = [];
    for (let i = 0; i < n; i++) {
        let w = rng.chance(0.06) ? pseudoWord(rng) : rng.zipf(EN_WORDS);
        if (rng.chance(0.02)) w = String(rng.int(10000));
        if (i > 0 && i < n - 1 && rng.chance(0.07)) w += rng.pick([",", ";", ":", " —", " -"]);
        if (rng.chance(0.03)) w = `"${w}"`;
        if (rng.chance(0.03)) w = `(${w})`;
        ws.push(w);
    }
    ws[0] = ws[0][0].toUpperCase() + ws[0].slice(1);
    if (rng.chance(0.04)) ws.splice(rng.int(ws.length), 0, rng.pick(["don't", "it's", "I'm", "they'll", "we've", "you're", "he'd"]));
    return ws.join(" ") + rng.weighted([[80, "."], [8, "?"], [5, "!"], [3, "..."], [2, ""], [2, ":"]]);
}

function englishParagraph(rng) {
    const n = rng.range(1, 7);
    const s = [];
    for (let i = 0; i < n; i++) s.push(rng.chance(0.15) ? rng.pick(EN_SENTENCES) : englishSentence(rng));
    return s.join(" ");
}

function chineseText(rng) {
    if (rng.chance(0.4)) return rng.pick(ZH);
    let s = "";
    const n = rng.range(4, 60);
    for (let i = 0; i < n; i++) {
        s += rng.zipf(ZH_CHARS);
        if (rng.chance(0.08)) s += rng.pick(["，", "。", "、", "；", "！", "？", "：", "“", "”"]);
        if (rng.chance(0.02)) s += rng.pick(["AI", "GPU", " Python ", "2024", "3.14"]);
    }
    return s + "。";
}

function japaneseText(rng) {
    if (rng.chance(0.4)) return rng.pick(JA);
    let s = "";
    const n = rng.range(4, 50);
    for (let i = 0; i < n; i++) {
        s += rng.chance(0.6) ? rng.pick(JA_KANA) : rng.zipf(ZH_CHARS);
        if (rng.chance(0.06)) s += rng.pick(["、", "。", "「", "」", "ー", "・"]);
    }
    return s + "。";
}

function koreanText(rng) {
    if (rng.chance(0.3)) return rng.pick(KO);
    if (rng.chance(0.3)) {
        // random precomposed syllables, outside any word list
        let s = "";
        const n = rng.range(2, 30);
        for (let i = 0; i < n; i++) s += String.fromCodePoint(0xac00 + rng.int(11172)) + (rng.chance(0.2) ? " " : "");
        return s;
    }
    return words(rng, LANG_WORDS.ko, rng.range(3, 20)) + rng.pick([".", "?", "!", ""]);
}

function langText(rng, lang) {
    const fixed = { ar: AR, hi: HI, th: TH, ru: RU, el: EL }[lang];
    if (rng.chance(0.4)) return rng.pick(fixed);
    const sep = lang === "th" ? rng.pick(["", "", " "]) : " ";
    let s = words(rng, LANG_WORDS[lang], rng.range(3, 25), sep);
    if (lang === "ru" || lang === "el") s = s[0].toUpperCase() + s.slice(1);
    return s + rng.pick([".", "?", "!", "", lang === "hi" ? "।" : ".", lang === "ar" ? "؟" : "."]);
}

function emojiText(rng) {
    const parts = [];
    const n = rng.range(1, 8);
    for (let i = 0; i < n; i++) {
        const kind = rng.int(6);
        if (kind === 0) parts.push(rng.pick(EMOJI_SINGLE));
        else if (kind === 1) parts.push(rng.pick(EMOJI_ZWJ));
        else if (kind === 2) parts.push(rng.pick(SKIN_BASES) + rng.pick(SKIN));
        else if (kind === 3) parts.push(rng.pick(FLAGS));
        else if (kind === 4) parts.push(rng.pick(KEYCAPS));
        else parts.push(rng.zipf(EN_WORDS));
    }
    return parts.join(rng.pick(["", " ", " ", "\n", ", "]));
}

function combiningText(rng) {
    const parts = [];
    const n = rng.range(1, 6);
    for (let i = 0; i < n; i++) parts.push(rng.chance(0.7) ? rng.pick(COMBINING) : rng.zipf(EN_WORDS));
    return parts.join(rng.pick(["", " ", " ", "-"]));
}

function codeText(rng) {
    const lang = rng.pick(Object.keys(CODE));
    let s = rng.pick(CODE[lang]);
    if (rng.chance(0.3)) s = s.replace(/ {4}/g, "\t");
    if (rng.chance(0.2)) s = s.replace(/\n/g, "\r\n");
    if (rng.chance(0.3)) s = s.replace(/\b(x|n|i|buf|self)\b/g, () => rng.pick(IDENTS));
    if (rng.chance(0.2)) s = "    ".repeat(rng.range(1, 4)) + s.split("\n").join("\n" + "    ".repeat(rng.range(0, 3)));
    if (rng.chance(0.2)) s += "\n" + rng.pick(CODE[lang]);
    return s;
}

function whitespaceText(rng) {
    let s = "";
    const n = rng.range(1, 12);
    for (let i = 0; i < n; i++) {
        if (rng.chance(0.5)) s += rng.pick(WS).repeat(rng.chance(0.2) ? rng.range(2, 40) : 1);
        else s += rng.chance(0.8) ? rng.zipf(EN_WORDS) : rng.pick(["中文", "é", "123", "!", "😀", "'s", "x"]);
    }
    return s;
}

function numberText(rng) {
    const kind = rng.int(14);
    const digits = (n) => { let s = String(rng.range(1, 9)); for (let i = 1; i < n; i++) s += rng.int(10); return s; };
    switch (kind) {
        case 0: return digits(rng.range(1, 40));
        case 1: return `${digits(rng.range(1, 6))}.${digits(rng.range(1, 10))}`;
        case 2: return `-${digits(rng.range(1, 4))},${digits(3).padStart(3, "0")},${digits(3).padStart(3, "0")}.${rng.int(100)}`;
        case 3: return `+1 (${digits(3)}) ${digits(3)}-${digits(4)}`;
        case 4: return `+${rng.range(1, 99)} ${digits(2)} ${digits(4)} ${digits(4)}`;
        case 5: return `${rng.range(1990, 2030)}-${String(rng.range(1, 12)).padStart(2, "0")}-${String(rng.range(1, 28)).padStart(2, "0")}T${rng.range(10, 23)}:${rng.range(10, 59)}:${rng.range(10, 59)}Z`;
        case 6: return `v${rng.int(20)}.${rng.int(100)}.${rng.int(1000)}-rc${rng.int(5)}`;
        case 7: return `0x${rng.u32().toString(16).toUpperCase()}${rng.u32().toString(16)}`;
        case 8: return `${digits(1)}.${digits(3)}e${rng.pick(["+", "-", ""])}${rng.range(1, 300)}`;
        case 9: return `$${digits(rng.range(1, 7))}.${String(rng.int(100)).padStart(2, "0")} (${rng.int(100)}%)`;
        case 10: return rng.pick(["٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "１２３４５", "²³¹⁰", "½¾⅓", "ⅠⅡⅢⅫ", "①②③", "𝟙𝟚𝟛", "๑๒๓", "〇一二三"]) + digits(rng.range(1, 5));
        case 11: return `${digits(2)}:${digits(2)} ${digits(1)}/${digits(2)}/${digits(4)} #${digits(5)} ${digits(3)}x${digits(3)}`;
        case 12: return `The total was ${digits(rng.range(1, 12))} tokens and ${digits(2)}.${digits(2)}% of ${digits(7)} bytes.`;
        default: return `${digits(rng.range(50, 200))}`;
    }
}

function contractionText(rng) {
    const forms = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "'Re", "'rE", "'Ll", "'lL", "'Ve", "'vE",
        "’s", "’t", "'x", "'", "''", "'s'", "'ss", "'dd", "'lls", "'mm", "'ve've"];
    const heads = ["I", "you", "YOU", "they", "THEY", "it", "IT", "He", "we", "don", "DON", "can", "won", "CAN", "Bob", "o", "rock", "", " ", "\n", "1", "中", "é"];
    const parts = [];
    const n = rng.range(1, 6);
    for (let i = 0; i < n; i++) parts.push(rng.pick(heads) + rng.pick(forms) + (rng.chance(0.5) ? rng.pick(["", "s", "t", " x", "a", "S"]) : ""));
    const fixed = ["I'M", "they'Ll", "DON'T", "'s", "I'm", "they'll", "don't", "Don't", "WE'VE", "you'D", "it'S", "John's", "JOHN'S", "'S'", "rock'n'roll", "'tis", "''s", "'s's", "'ll'll"];
    return rng.chance(0.35) ? rng.pick(fixed) : parts.join(rng.pick([" ", "", ", "]));
}

function specialText(rng) {
    const parts = [];
    const n = rng.range(1, 7);
    for (let i = 0; i < n; i++) {
        const r = rng.int(10);
        if (r < 4) parts.push(rng.pick(ADDED_TOKENS));
        else if (r < 6) parts.push(rng.pick(SPECIAL_LOOKALIKES));
        else if (r < 8) parts.push(rng.zipf(EN_WORDS));
        else parts.push(rng.pick(["\n", " ", "user\n", "assistant\n", "{\"name\": \"f\"}", "中文", "\r\n", "  "]));
    }
    return parts.join(rng.pick(["", "", " ", "\n"]));
}

// Code points from blocks whose assignments are stable across Unicode
// versions (so Node's, PCRE2's and utf8proc's tables agree on them).
const STABLE_RANGES = [[0x20, 0x7e], [0xa0, 0x24f], [0x250, 0x2ff], [0x370, 0x3ff], [0x400, 0x4ff], [0x531, 0x587], [0x5d0, 0x5ea],
    [0x621, 0x64a], [0x905, 0x939], [0xe01, 0xe3a], [0x1e00, 0x1eff], [0x2010, 0x2027], [0x2030, 0x205e], [0x20a0, 0x20b5],
    [0x2100, 0x214f], [0x2190, 0x21ff], [0x2200, 0x22ff], [0x2500, 0x257f], [0x25a0, 0x25ff], [0x2600, 0x26ff], [0x3041, 0x3096],
    [0x30a1, 0x30fa], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xe000, 0xe0ff], [0xff01, 0xff5e], [0x1d400, 0x1d4ff], [0x1f300, 0x1f5ff],
    [0x1f600, 0x1f64f], [0x20000, 0x2a6d6]];
function randomCodepoints(rng) {
    let s = "";
    const n = rng.range(1, 24);
    for (let i = 0; i < n; i++) {
        const [lo, hi] = rng.pick(STABLE_RANGES);
        const c = String.fromCodePoint(rng.range(lo, hi));
        if (/\p{Cn}/u.test(c)) continue;
        s += c;
    }
    return s;
}

function controlText(rng) {
    let s = "";
    const n = rng.range(1, 10);
    for (let i = 0; i < n; i++) {
        const r = rng.int(4);
        if (r === 0) s += String.fromCharCode(rng.range(1, 0x1f));
        else if (r === 1) s += String.fromCharCode(rng.range(0x7f, 0x9f));
        else s += rng.zipf(EN_WORDS);
    }
    return s;
}

const GENERATORS = {
    prose_en: englishParagraph,
    zh: chineseText,
    ja: japaneseText,
    ko: koreanText,
    ar: (r) => langText(r, "ar"),
    hi: (r) => langText(r, "hi"),
    th: (r) => langText(r, "th"),
    ru: (r) => langText(r, "ru"),
    el: (r) => langText(r, "el"),
    other_scripts: (r) => r.pick(OTHER),
    emoji: emojiText,
    combining: combiningText,
    code: codeText,
    whitespace: whitespaceText,
    numbers: numberText,
    contractions: contractionText,
    special: specialText,
    codepoints: randomCodepoints,
    control: controlText,
};

function mixText(rng, maxParts) {
    const keys = Object.keys(GENERATORS);
    const parts = [];
    const n = rng.range(2, maxParts);
    for (let i = 0; i < n; i++) parts.push(GENERATORS[rng.pick(keys)](rng));
    let s = "";
    for (const p of parts) s += (s ? rng.pick(["", " ", "\n", "\n\n", "  ", "\t", "\r\n", ". "]) : "") + p;
    return s;
}

function longText(rng, minBytes) {
    let s = "";
    while (Buffer.byteLength(s, "utf8") < minBytes) {
        s += (s ? rng.pick(["\n\n", "\n", " "]) : "") + (rng.chance(0.5) ? englishParagraph(rng) : mixText(rng, 6));
    }
    return s;
}

// Hand-picked edge cases, each a known trap for a hand-written tokenizer.
const EDGE_CASES = [
    "", " ", "  ", "\n", "\t", "\r\n", "\r", "a", "A", "0", "'", "''", "'s", "'S", "s", "中", "é", "😀", "\u0000", "a\u0000b",
    "\u00A0", "\u3000", "\u2028", "\u0085", "\uFEFF", "\uFEFFhello", "hello\uFEFF", "a\u0085b", "a \u0085 b", "\u0085\n", "a\u00A0b", "a\u00A0 b", "a \u00A0b",
    " \u3000 ", "x\u2028y", "x\u2029y", "\u180E", " \u180E", "a \u180E b", "\t\t\u180E", "  \u180E\n", "\u180E\u180E ", "\u000B", "\u000C", "a\u000Bb", "\u200B", "a\u200Bb", "\u00AD",
    "     ", " a", "  a", "   a", "a ", "a  ", "a   ", " \n", "\n ", " \n ", "\n\n\n", "\r\n\r\n", "\r\r\n", "\n\r", " \r\n x", "\t\n", "a\n\n b",
    "hello world", "Hello World", "HELLO WORLD", "hello  world", "hello\tworld", "hello\nworld", "hello\r\nworld",
    "1", "12", "123", "1234", "12345678901234567890", "1.5", "-1", "+1", "3.14159", "1,000,000", "1e10", "0x1F", "١٢٣", "१२३",
    "I'M", "they'Ll", "DON'T", "'s", "it's", "it'S", "IT'S", "'ll", "'LL", "'lL", "x'd", "x'D", "'re'", "''s", "'s'", "it'ſ", "'ſ", "it'K", "’s",
    "e\u0301", "\u00E9", "A\u030A", "\u212B", "\u1100\u1161\u11A8", "\u1100\u1161", "a\u0302\u0323", "\u0958", "\u0344", "\u0301", " \u0301", "\n\u0301",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_", "<|im_start|", "<|im_start|><|im_end|>",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "<think>\n\n</think>\n\n", "a<|im_end|>b", " <|im_end|> ", "<<|endoftext|>>",
    "<|endoftext|><|endoftext|><|endoftext|>", "<tool_call>\n{\"name\": \"get\", \"arguments\": {}}\n</tool_call>", "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<tool_response>\nok\n</tool_response>", "e\u0301<|im_end|>e\u0301", "<|im_end|>\u0301", "\u0301<|im_end|>", "<|vision_start|><|image_pad|><|vision_end|>",
    "👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "🇯🇵", "1️⃣", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "\u{10FFFF}", "\u{E0001}", "\u{1F600}\u{1F600}\u{1F600}", "\uFFFD", "\uFFFF", "\u{F0000}",
    "ǅ", "ǈ", "ﬀ", "ß", "ẞ", "İ", "ı", "K", "Ω", "Å", "ſ", "µ", "ª", "º", "²", "½", "Ⅻ", "〇", "々", "ー", "・", "゛", "ヿ",
    "!!!", "???", "...", "---", "===", "***", "___", "~~~", "```", "\"\"\"", "///", "\\\\\\", "$$$", "%%%", "&&&", "|||", "@@@", "###", "^^^", "(((", ")))", "[[[", "]]]", "{{{", "}}}",
    "a.b", "a..b", "a...b", ".a", "a.", " .", ". ", "?!", " !?", "!\n", ".\n\n", ";\r\n", "'\n", "a'\nb",
    "x".repeat(1000), " ".repeat(1000), "\n".repeat(200), "ab".repeat(500), "中".repeat(500), "😀".repeat(200), "1".repeat(500), "'s".repeat(100), "\t ".repeat(100),
    "<|im_start|>".repeat(20), "e\u0301".repeat(100), " \u00A0".repeat(100), "a\r\n".repeat(100),
];

// The conformance corpus: every string with its category.
export function generateCorpus(seed = DEFAULT_SEED) {
    const rng = makeRng(seed);
    const out = [];
    for (const text of EDGE_CASES) out.push({ cat: "edge", text });
    for (const text of EN_SENTENCES) out.push({ cat: "prose_en", text });
    for (const list of [ZH, JA, KO, AR, HI, TH, RU, EL, OTHER]) for (const text of list) out.push({ cat: "fixed_scripts", text });
    for (const text of COMBINING) out.push({ cat: "combining", text });
    for (const text of [...EMOJI_SINGLE, ...EMOJI_ZWJ, ...FLAGS, ...KEYCAPS]) out.push({ cat: "emoji", text });
    for (const text of ADDED_TOKENS) out.push({ cat: "special", text }, { cat: "special", text: ` ${text} ` }, { cat: "special", text: `x${text}y` });
    for (const text of SPECIAL_LOOKALIKES) out.push({ cat: "special", text });
    for (const list of Object.values(CODE)) for (const text of list) out.push({ cat: "code", text });
    const counts = {
        prose_en: 220, zh: 80, ja: 70, ko: 70, ar: 50, hi: 60, th: 50, ru: 50, el: 40, emoji: 90, combining: 90, code: 180,
        whitespace: 150, numbers: 130, contractions: 110, special: 150, codepoints: 90, control: 30,
    };
    for (const [cat, n] of Object.entries(counts)) {
        for (let i = 0; i < n; i++) out.push({ cat, text: GENERATORS[cat](rng) });
    }
    for (let i = 0; i < 350; i++) out.push({ cat: "mix", text: mixText(rng, 8) });
    for (let i = 0; i < 24; i++) out.push({ cat: "long", text: longText(rng, rng.range(2000, 12000)) });
    return out;
}

// The benchmark text: realistic proportions (mostly prose and code), no
// special-token text (so both sides agree whatever they do with it).
export function generateBench(mb, seed = DEFAULT_SEED) {
    const rng = makeRng(seed ^ 0x5eed);
    const target = Math.ceil(mb * 1e6);
    const chunks = [];
    let bytes = 0;
    const mix = [[52, englishParagraph], [24, codeText], [5, chineseText], [2, japaneseText], [2, koreanText], [2, (r) => langText(r, "ru")],
        [1, (r) => langText(r, "ar")], [1, (r) => langText(r, "hi")], [1, (r) => langText(r, "th")], [1, (r) => langText(r, "el")],
        [3, numberText], [1, emojiText], [1, combiningText], [2, whitespaceText], [2, (r) => mixText(r, 4)]];
    while (bytes < target) {
        let s = rng.weighted(mix)(rng);
        for (const t of ADDED_TOKENS) s = s.split(t).join("");
        s += rng.weighted([[70, "\n\n"], [25, "\n"], [5, " "]]);
        chunks.push(s);
        bytes += Buffer.byteLength(s, "utf8");
    }
    return chunks.join("");
}

// Coverage checks: the brief's required categories really are in the corpus.
export function coverage(corpus) {
    const has = (re) => corpus.filter((e) => re.test(e.text)).length;
    return {
        total: corpus.length,
        empty: corpus.filter((e) => e.text === "").length,
        han: has(/\p{Script=Han}/u),
        kana: has(/[\p{Script=Hiragana}\p{Script=Katakana}]/u),
        hangul: has(/\p{Script=Hangul}/u),
        hangul_jamo_conjoining: has(/[\u1100-\u11ff]/u),
        arabic: has(/\p{Script=Arabic}/u),
        devanagari: has(/\p{Script=Devanagari}/u),
        devanagari_marks: has(/\p{Script=Devanagari}\p{M}/u),
        thai: has(/\p{Script=Thai}/u),
        cyrillic: has(/\p{Script=Cyrillic}/u),
        greek: has(/\p{Script=Greek}/u),
        emoji_zwj: has(/\u200D/u),
        emoji_skin_tone: has(/[\u{1F3FB}-\u{1F3FF}]/u),
        emoji_flag: has(/[\u{1F1E6}-\u{1F1FF}]{2}/u),
        emoji_keycap: has(/\u20E3/u),
        not_nfc: corpus.filter((e) => e.text.normalize("NFC") !== e.text).length,
        crlf: has(/\r\n/),
        nbsp: has(/\u00A0/), ideographic_space: has(/\u3000/), u2028: has(/\u2028/), nel_u0085: has(/\u0085/), bom_ufeff: has(/\uFEFF/),
        space_run_8plus: has(/ {8,}/), tab: has(/\t/), newline_run_3plus: has(/\n{3,}/),
        long_number_10plus: has(/\d{10,}/), decimal: has(/\d\.\d/),
        contraction_upper: has(/'(S|T|RE|VE|M|LL|D)\b/), contraction_mixed: has(/'(Ll|lL|Re|rE|Ve|vE)/),
        added_token_text: corpus.filter((e) => ADDED_TOKENS.some((t) => e.text.includes(t))).length,
        partial_special: has(/<\|im_(?!start\|>|end\|>)/),
        code_c: has(/#include|printf\(/), code_python: has(/\bdef \w+\(/), code_js: has(/=>/), code_rust: has(/\bfn \w+/),
        code_html: has(/<\/?(html|div|p|script)\b/), code_json: has(/^\s*[{[]\s*"/m), code_shell: has(/#!\/usr\/bin\/env bash|\$HOME/),
        bytes_ge_2k: corpus.filter((e) => Buffer.byteLength(e.text) >= 2000).length,
        max_bytes: Math.max(...corpus.map((e) => Buffer.byteLength(e.text))),
    };
}

export { ADDED_TOKENS };

// ---------------------------------------------------------------- CLI

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
    const args = process.argv.slice(2);
    let seed = DEFAULT_SEED, benchMb = null, stats = false;
    for (let i = 0; i < args.length; i++) {
        if (args[i] === "--seed") seed = Number(args[++i]);
        else if (args[i] === "--bench-mb") benchMb = Number(args[++i]);
        else if (args[i] === "--stats") stats = true;
        else {
            process.stderr.write(`corpus.mjs: unknown argument '${args[i]}' (--seed N, --bench-mb N, --stats)\n`);
            process.exit(2);
        }
    }
    if (benchMb !== null) {
        if (!(benchMb > 0)) { process.stderr.write("corpus.mjs: --bench-mb needs a positive number\n"); process.exit(2); }
        process.stdout.write(generateBench(benchMb, seed));
    } else {
        const corpus = generateCorpus(seed);
        if (stats) {
            const byCat = {};
            for (const e of corpus) byCat[e.cat] = (byCat[e.cat] ?? 0) + 1;
            process.stdout.write(JSON.stringify({ categories: byCat, coverage: coverage(corpus) }, null, 1) + "\n");
        } else {
            process.stdout.write(corpus.map((e) => JSON.stringify(e)).join("\n") + "\n");
        }
    }
}
