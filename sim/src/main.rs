fn main(){ println!("madsim={}", cfg!(madsim)); }
