// TeX commands that draw a symbol, a structure or a style, and never words of their own: MathJax 2's TeX source may
// use these (see formulas.ts). A command outside this list makes the TeX untrusted, and the drawn formula is used.
const NAMES = `
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi rho varrho sigma
varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega
frac dfrac tfrac cfrac binom dbinom tbinom sqrt over choose
sum prod coprod int iint iiint oint bigcup bigcap bigoplus bigotimes bigvee bigwedge lim limsup liminf
sin cos tan cot sec csc sinh cosh tanh coth arcsin arccos arctan log ln lg exp max min sup inf det dim ker deg gcd arg
Pr hom mod bmod pmod operatorname
left right big Big bigg Bigg bigl bigr Bigl Bigr middle
cdot cdots ldots dots ddots vdots times div pm mp ast star circ bullet oplus ominus otimes oslash odot
leq le geq ge neq ne equiv approx sim simeq cong propto ll gg prec succ preceq succeq subset supset subseteq supseteq
in notin ni cup cap setminus emptyset varnothing forall exists nexists neg lnot land lor wedge vee implies iff
to gets mapsto rightarrow leftarrow leftrightarrow Rightarrow Leftarrow Leftrightarrow longrightarrow longleftarrow
Longrightarrow Longleftarrow uparrow downarrow
infty partial nabla hbar ell Re Im aleph prime angle triangle perp parallel mid nmid
langle rangle lfloor rfloor lceil rceil lbrace rbrace vert Vert lvert rvert lVert rVert backslash
hat bar vec dot ddot tilde widehat widetilde overline underline overbrace underbrace overrightarrow check breve acute grave
mathrm mathbf mathit mathsf mathtt mathcal mathbb mathfrak mathscr boldsymbol bm rm bf it sf tt cal
text textrm textbf textit mbox displaystyle textstyle scriptstyle
quad qquad enspace thinspace negthinspace not limits nolimits
begin end hline cr nonumber notag tag label
`;

export const TEX_COMMANDS: ReadonlySet<string> = new Set(NAMES.split(/\s+/).filter((n) => n !== ""));
