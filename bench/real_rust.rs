// scripts/bench.sh --real: a Rust release binary (no frame pointers, Rust's own default) that
// allocates from deep stacks, as parsers and compilers do: N rounds of generating an arithmetic
// expression, parsing it by recursive descent into boxed nodes, evaluating and printing it back,
// and counting the printed forms in a HashMap and a BTreeMap.
//   real_rust N
use std::collections::{BTreeMap, HashMap};

enum Expr {
    Num(i64),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn generate(rng: &mut Rng, depth: u32, out: &mut String) {
    let r = rng.next();
    if depth == 0 || r % 5 == 0 {
        out.push_str(&(r % 1000).to_string());
        return;
    }
    if r % 7 == 0 {
        out.push('-');
        generate(rng, depth - 1, out);
        return;
    }
    out.push('(');
    generate(rng, depth - 1, out);
    out.push(['+', '-', '*', '%'][(r >> 8) as usize % 4]);
    generate(rng, depth - 1, out);
    out.push(')');
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn expr(&mut self) -> Box<Expr> {
        match self.s[self.at] {
            b'(' => {
                self.at += 1;
                let l = self.expr();
                let op = self.s[self.at] as char;
                self.at += 1;
                let r = self.expr();
                self.at += 1; // ')'
                Box::new(Expr::Bin(op, l, r))
            }
            b'-' => {
                self.at += 1;
                Box::new(Expr::Neg(self.expr()))
            }
            _ => {
                let start = self.at;
                while self.at < self.s.len() && self.s[self.at].is_ascii_digit() {
                    self.at += 1;
                }
                let text = String::from_utf8(self.s[start..self.at].to_vec()).unwrap();
                Box::new(Expr::Num(text.parse().unwrap()))
            }
        }
    }
}

fn eval(e: &Expr) -> i64 {
    match e {
        Expr::Num(v) => *v,
        Expr::Neg(x) => eval(x).wrapping_neg(),
        Expr::Bin(op, l, r) => {
            let (a, b) = (eval(l), eval(r));
            match op {
                '+' => a.wrapping_add(b),
                '-' => a.wrapping_sub(b),
                '*' => a.wrapping_mul(b),
                _ => if b == 0 { a } else { a.wrapping_rem(b) },
            }
        }
    }
}

fn print(e: &Expr) -> String {
    match e {
        Expr::Num(v) => format!("{v}"),
        Expr::Neg(x) => format!("-{}", print(x)),
        Expr::Bin(op, l, r) => format!("({} {op} {})", print(l), print(r)),
    }
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut by_text: HashMap<String, usize> = HashMap::new();
    let mut by_value: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut total = 0i64;
    for _ in 0..n {
        let mut src = String::new();
        generate(&mut rng, 10, &mut src);
        let tree = Parser { s: src.as_bytes(), at: 0 }.expr();
        let v = eval(&tree);
        total = total.wrapping_add(v);
        let text = print(&tree);
        *by_text.entry(text.clone()).or_insert(0) += 1;
        let bucket = by_value.entry(v % 64).or_default();
        bucket.push(text);
        if bucket.len() > 8 {
            bucket.remove(0);
        }
    }
    println!("{} {} {}", total, by_text.len(), by_value.len());
}
