// Regenerates bench/pages/article.html: a ~5,000-word news article with realistic page chrome (site nav,
// header, breadcrumbs, share bar, sidebar, related links, comments, a big footer). Deterministic (seeded), so
// the committed file and a regenerated one are identical.  Usage: node bench/pages/make-article.mjs
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

let seed = 20240611;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const pick = (list) => list[Math.floor(rand() * list.length)];

const people = [
  "Marta Lindqvist",
  "Oskar Brenner",
  "Dr. Amina Qureshi",
  "Tomas Eriksen",
  "Lena Hofmann",
  "Rafael Duarte",
  "Ingrid Solberg",
  "Peter Vance",
  "Chiara Bellini",
  "Henrik Aalto",
];
const roles = [
  "the utility's chief engineer",
  "a hydrologist at the regional university",
  "the deputy mayor for infrastructure",
  "a shift supervisor at the pumping station",
  "a spokesperson for the water authority",
  "an economist who studies public works",
  "the head of the residents' association",
  "a contractor who has worked on the tunnels for two decades",
];
const places = [
  "the northern reservoir",
  "the Old Harbour district",
  "the river delta",
  "the eastern pumping station",
  "the central treatment plant",
  "the hill suburbs",
  "the industrial port",
  "the valley towns",
  "the canal quarter",
  "the new housing estates",
];
const things = [
  "the aging cast-iron mains",
  "the flood barriers",
  "the overflow tunnels",
  "the sensor network",
  "the emergency generators",
  "the filtration beds",
  "the district heating loop",
  "the storm drains",
  "the control room software",
  "the backup reservoirs",
];
const verbs = ["replaced", "inspected", "reinforced", "mapped", "rebuilt", "monitored", "upgraded", "tested", "expanded", "rerouted"];
const adjectives = ["costly", "overdue", "ambitious", "contested", "quiet", "fragile", "essential", "unglamorous", "complex", "urgent"];
const numbers = ["1.2 billion", "340 million", "18,000", "2,700", "65", "12", "four", "nine", "230", "forty"];
const years = ["1911", "1936", "1958", "1974", "1989", "2003", "2011", "2019", "2024", "2031"];

const templates = [
  () =>
    `Engineers have ${pick(verbs)} ${pick(things)} near ${pick(places)} over the past ${pick(numbers)} months, a job that officials describe as ${pick(adjectives)} but unavoidable.`,
  () => `"Nobody notices this work until it fails," said ${pick(people)}, ${pick(roles)}, standing beside a trench that exposed pipes laid in ${pick(years)}.`,
  () => `The city budgeted ${pick(numbers)} euros for the programme, though critics argue the real cost will be far higher once ${pick(things)} are included.`,
  () => `At ${pick(places)}, crews work in shifts through the night so that households see as little disruption as possible.`,
  () =>
    `Records from ${pick(years)} show that ${pick(things)} were already considered ${pick(adjectives)} at the time, yet repairs were postponed again and again.`,
  () => `${pick(people)}, ${pick(roles)}, said the ${pick(adjectives)} part is not the engineering but the coordination between dozens of agencies.`,
  () => `Residents of ${pick(places)} remember the winter of ${pick(years)}, when ${pick(things)} failed and thousands of homes went without water for days.`,
  () => `A report published this spring estimated that ${pick(numbers)} litres are lost every hour through leaks in ${pick(things)}.`,
  () => `The new plan puts sensors on ${pick(things)} so that operators at ${pick(places)} can see problems hours before they become emergencies.`,
  () => `Some council members want to slow the work down, arguing that the ${pick(adjectives)} timetable leaves too little room for public consultation.`,
  () => `Others say the opposite: every year of delay adds roughly ${pick(numbers)} euros to the final bill and raises the risk of a serious failure.`,
  () => `In the control room, ${pick(numbers)} screens show pressure, flow and temperature across the network, updated every few seconds.`,
  () => `"We are managing a system designed for a city half this size," said ${pick(people)}, who has spent years at ${pick(places)}.`,
  () => `The river itself has changed, too: heavier rain in autumn and longer droughts in summer put new strain on ${pick(things)}.`,
  () => `Contractors say finding skilled welders and tunnel workers has become the ${pick(adjectives)} bottleneck, more than money or materials.`,
  () => `Maps drawn in ${pick(years)} are still in use, annotated by hand with decades of corrections, because digital records were never completed.`,
  () => `Near ${pick(places)}, a school has turned the construction site into a lesson, with pupils visiting to watch ${pick(things)} being ${pick(verbs)}.`,
  () => `Energy prices matter as well: pumping water uphill to ${pick(places)} accounts for a large share of the utility's electricity use.`,
  () => `The authority has promised to publish monthly progress figures, including how many kilometres of ${pick(things)} have been ${pick(verbs)}.`,
  () => `For now, most people only notice the orange barriers and the occasional detour, and few ask what lies beneath the street.`,
];

const sentence = () => pick(templates)();
const paragraph = (n) => Array.from({ length: n }, sentence).join(" ");
const words = (s) => s.split(/\s+/).filter(Boolean).length;

const headings = [
  "A network older than anyone running it",
  "Where the water goes",
  "The night shift",
  "Money, and who pays it",
  "Listening to the pipes",
  "What the old maps say",
  "A changing river",
  "The people in the trenches",
  "Arguments in the council chamber",
  "What comes next",
];

let body = "";
let count = 0;
let h = 0;
let i = 0;
while (count < 4850) {
  if (i > 0 && i % 6 === 0 && h < headings.length) body += `\n      <h2>${headings[h++]}</h2>`;
  if (i === 9)
    body += `\n      <figure><img src="/img/pumping-station.jpg" alt="Workers inside the eastern pumping station" width="1200" height="800"><figcaption>Workers inside the eastern pumping station. Photo: City Archive</figcaption></figure>`;
  if (i === 21)
    body += `\n      <blockquote><p>"The water system is the one piece of the city that has to work every single minute, and it is the piece nobody sees."</p></blockquote>`;
  if (i === 15 || i === 33)
    body += `\n      <aside class="inline-ad" aria-label="Advertisement"><p>Advertisement</p><a href="https://ads.example/click?id=${i}">Upgrade your boiler this winter: 20% off installation</a></aside>`;
  if (i === 27)
    body += `\n      <div class="read-also"><strong>Read also:</strong> <a href="/news/2024/05/harbour-flood-barrier">The harbour flood barrier, five years on</a></div>`;
  const p = paragraph(3 + Math.floor(rand() * 3));
  count += words(p);
  body += `\n      <p>${p}</p>`;
  i++;
}
const closing =
  "CLOSING-PARAGRAPH-MARKER: when the last trench near the river is filled in, the city will have a water network fit for the next hundred years, and almost nobody will notice.";
body += `\n      <p>${closing}</p>`;
count += words(closing);

const navLinks = [
  "World",
  "Politics",
  "Business",
  "Tech",
  "Science",
  "Climate",
  "Culture",
  "Sport",
  "Opinion",
  "Travel",
  "Food",
  "Podcasts",
  "Video",
  "Newsletters",
]
  .map((s) => `<li><a href="/${s.toLowerCase()}">${s}</a></li>`)
  .join("");
const related = Array.from(
  { length: 8 },
  (_, k) => `<li><a href="/news/2024/0${1 + (k % 9)}/story-${k}"><img src="/img/thumb-${k}.jpg" alt=""> ${pick(headings)}: ${sentence().slice(0, 80)}</a></li>`,
).join("\n        ");
const mostRead = Array.from(
  { length: 10 },
  (_, k) => `<li><span class="rank">${k + 1}</span><a href="/news/most-read/${k}">${sentence().slice(0, 70)}</a></li>`,
).join("\n        ");
const comments = Array.from(
  { length: 14 },
  (_, k) =>
    `<li class="comment"><div class="meta"><a href="/users/reader${k}">reader${k}</a> <time>${1 + k} hours ago</time></div><p>${paragraph(1 + (k % 3))}</p><div class="actions"><button>Reply</button> <button>Like (${(k * 7) % 31})</button> <a href="/report?c=${k}">Report</a></div></li>`,
).join("\n        ");
const footerCols = [
  "About us",
  "Contact",
  "Careers",
  "Advertise",
  "Privacy policy",
  "Cookie settings",
  "Terms of use",
  "Accessibility",
  "Corrections",
  "Archive",
  "RSS feeds",
  "Help",
]
  .map((s) => `<li><a href="/${s.toLowerCase().replace(/\s+/g, "-")}">${s}</a></li>`)
  .join("");

const html = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Beneath the streets: the city's race to rebuild its water network | The Daily Ledger</title>
  <meta name="description" content="A century-old water system, a tight budget and a changing river: inside the programme to rebuild the pipes nobody sees.">
  <meta property="og:title" content="Beneath the streets: the city's race to rebuild its water network">
  <meta name="author" content="Marta Lindqvist">
  <style>
    body { font-family: Georgia, serif; margin: 0; color: #222; }
    .site-header, .site-footer { background: #111; color: #eee; padding: 1em; }
    .site-header a, .site-footer a { color: #eee; }
    nav ul, .site-footer ul { list-style: none; display: flex; flex-wrap: wrap; gap: 1em; padding: 0; }
    .layout { display: flex; gap: 2em; max-width: 1200px; margin: auto; }
    main { flex: 3; } .sidebar { flex: 1; }
    .cookie-banner { position: fixed; bottom: 0; background: #ffd; padding: 1em; }
  </style>
</head>
<body>
  <div class="cookie-banner" role="dialog"><p>We use cookies to improve your experience and to show personalised ads.</p><button>Accept all</button> <button>Manage choices</button></div>
  <header class="site-header">
    <a class="logo" href="/">The Daily Ledger</a>
    <form class="search" action="/search"><input type="search" name="q" placeholder="Search"><button>Search</button></form>
    <a href="/subscribe">Subscribe</a> <a href="/login">Sign in</a>
    <nav aria-label="Sections"><ul>${navLinks}</ul></nav>
  </header>
  <div class="layout">
  <main>
    <ol class="breadcrumbs"><li><a href="/">Home</a></li><li><a href="/news">News</a></li><li><a href="/news/city">City</a></li></ol>
    <article>
      <header>
        <h1>Beneath the streets: the city's race to rebuild its water network</h1>
        <p class="standfirst">A century-old water system, a tight budget and a changing river: inside the programme to rebuild the pipes nobody sees.</p>
        <p class="byline">By <a href="/authors/marta-lindqvist" rel="author">Marta Lindqvist</a>, City correspondent · <time datetime="2024-06-11T06:00:00Z">11 June 2024</time></p>
        <div class="share"><a href="https://social.example/share?u=1">Share</a> <a href="mailto:?subject=story">Email</a> <button>Save</button> <button>Listen (28 min)</button></div>
      </header>${body}
      <p class="tags">Topics: <a href="/topics/infrastructure">Infrastructure</a> <a href="/topics/water">Water</a> <a href="/topics/city-council">City council</a></p>
    </article>
    <section class="newsletter"><h2>Get the morning briefing</h2><form><input type="email" placeholder="Your email"><button>Sign up</button></form></section>
    <section class="related"><h2>Related stories</h2>
      <ul>
        ${related}
      </ul>
    </section>
    <section class="comments"><h2>Comments (14)</h2>
      <form><textarea placeholder="Join the discussion"></textarea><button>Post</button></form>
      <ol>
        ${comments}
      </ol>
    </section>
  </main>
  <aside class="sidebar">
    <section><h2>Most read</h2><ol>
        ${mostRead}
    </ol></section>
    <section class="ad"><p>Advertisement</p><a href="https://ads.example/sidebar">Switch your energy provider today</a></section>
  </aside>
  </div>
  <footer class="site-footer">
    <ul>${footerCols}</ul>
    <p>© 2024 The Daily Ledger Media Group. All rights reserved. Registered office: 1 Ledger Square.</p>
  </footer>
</body>
</html>
`;

writeFileSync(fileURLToPath(new URL("./article.html", import.meta.url)), html);
console.log(`article.html: ${count} words in the article body, ${html.length} characters of HTML`);
