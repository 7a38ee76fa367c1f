// A React-controlled form: values live in React state, so only events React sees change them.
import { useState } from "react";
import { createRoot } from "react-dom/client";

function App() {
  const [name, setName] = useState("");
  const [size, setSize] = useState("M");
  const [gift, setGift] = useState(false);
  const [added, setAdded] = useState<string | null>(null);
  return (
    <main>
      <h1>Shop</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setAdded(`${name}, ${size}, gift=${gift}`);
        }}
      >
        <label htmlFor="name">Name</label>
        <input id="name" value={name} onChange={(e) => setName(e.target.value)} />
        <label htmlFor="size">Size</label>
        <select id="size" value={size} onChange={(e) => setSize(e.target.value)}>
          <option value="S">Small</option>
          <option value="M">Medium</option>
          <option value="L">Large</option>
        </select>
        <label>
          <input type="checkbox" checked={gift} onChange={(e) => setGift(e.target.checked)} />
          Gift wrap
        </label>
        <button type="submit">Add to cart</button>
      </form>
      <p id="preview">Preview: {name || "(empty)"}</p>
      {added !== null && <p id="added">Added: {added}</p>}
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<App />);
